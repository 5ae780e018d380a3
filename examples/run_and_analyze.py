"""The quick start's scenario from Python, shortened to 7 s with an override (its last fault is at 6 s), run into a
directory of its own and analysed with PySpark; prints the delivery ratio and the checks.

Run as root from the repository root: python3 examples/run_and_analyze.py [RUN_DIR]
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import testbed.api as tb  # noqa: E402


def main() -> int:
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.mkdtemp(prefix="example-run-"), "run")
    scenario = tb.load_scenario("scenarios/quickstart.yaml", seed=2, set={"duration": "7s"})
    outcome = tb.run(scenario, out=out)
    print(f"run {outcome.run_id}: {outcome.status} in {outcome.dir}")
    if outcome.status != "completed":
        return 1
    (results,) = tb.analyze([outcome.dir]).values()
    messages = results["messages"]["all"]
    print(f"delivery ratio {messages['delivery_ratio']:.3f} over {messages['sent']} messages")
    for check in results["checks"]:
        print(f"  {check['check']:<22} {check['verdict']}")
    print(f"report: {os.path.join(outcome.dir, 'report', 'index.html')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
