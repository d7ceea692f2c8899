"""The `memsearch` command line: the Typer app (:mod:`.main`), its text rendering, and the commands that are more
than one library call (install, doctor, cron)."""
