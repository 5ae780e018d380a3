"""Remote runs: a scenario run on another machine (a lab server, the Vagrant VM) over SSH with
paramiko, its run directory brought back here so that `testbed analyze` reads it as a local one.

    testbed remote run USER@HOST[:PORT] SCENARIO [--key FILE] [--analyze]
    testbed remote doctor USER@HOST
    testbed remote fetch USER@HOST [RUN] [--wait]
    testbed remote stop USER@HOST RUN

- target.py: USER@HOST[:PORT], checked before any connection (exit 2).
- connection.py: connecting and logging in; host keys against known_hosts (refused when unknown
  unless --accept-new-host-key, which records them; always refused when changed); keys from
  --key, the agent and ~/.ssh; passwords only with --password-prompt, never shown or logged.
- checks.py: the testbed command and root (or passwordless sudo) there, else exit 3 with the
  command that installs it.
- inputs.py: the scenario and the files it references, uploaded with their relative layout.
- jobs.py: the work directory of a remote run (~/testbed-remote/<job>/: input/, output logs,
  pid, exit status, run/), started detached so that it outlives the connection; its state,
  stopping (SIGTERM, as Ctrl-C), recursive SFTP download, removal.
- relay.py: the remote progress and messages shown here, and Ctrl-C while waiting.
- runner.py: the verbs' flows.

`--analyze` analyses the downloaded run directory on this machine, after the download; the
remote machine only runs the scenario. A downloaded run's work directory is removed there
unless --keep-remote. Errors reaching the machine are RemoteError (exit 4).
"""
