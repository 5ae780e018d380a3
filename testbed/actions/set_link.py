"""`set_link`: change a link's impairments (one direction with `direction:`) on top of the
topology's values and the other active faults; undone after `for:` by restoring them.

Each value is checked here; the combination (jitter needs a delay on the same direction, say)
is checked against the action's own link when the scenario is validated, by rehearsing the whole
timeline (testbed.faults.rehearse), since faults stack."""

from __future__ import annotations

from ..model import LinkProps
from ..topology import IMPAIRMENT_KEYS, ImpairmentError, apply_impairments, impairment_value
from .base import FaultAction

RESTORE = {"restore": True}


class SetLink(FaultAction):
    name = "set_link"
    summary = "change the link's impairments (delay, jitter, loss, bandwidth, ...) until restored"
    target = "link"
    inverse = "set_link"
    fields = {key: "as in topology links" for key in IMPAIRMENT_KEYS}

    @property
    def field_schemas(self):
        from ..schema import impairment_schemas

        return impairment_schemas()

    def parse(self, reader, entry, path, topology):
        impairments = {k: v for k, v in entry.items() if k in IMPAIRMENT_KEYS}
        if not impairments:
            raise reader.fail(path, "set_link changes nothing", "one or more of " + ", ".join(IMPAIRMENT_KEYS))
        for key, value in impairments.items():
            try:
                impairment_value(key, value)
            except ImpairmentError as exc:
                raise reader.fail(path + (key,), exc.message, exc.allowed) from None
        return {"impairments": impairments}

    def undo_params(self, params):
        return {"impairments": dict(RESTORE)}

    def requires(self, planned):
        impairments = planned.params.get("impairments") or {}
        if impairments == RESTORE:
            return frozenset()
        return apply_impairments(LinkProps(), impairments, check_combination=False).active()

    def apply(self, nemesis, planned):
        index, sides = nemesis.sides(planned)
        impairments = planned.params["impairments"]
        for side in sides:
            if impairments == RESTORE:
                nemesis.link_overrides.pop((index, side), None)
            else:
                nemesis.link_overrides.setdefault((index, side), {}).update(impairments)
        nemesis.reshape(index)
        return None
