"""The shell app: run a command in an episode's repository checkout, sandboxed."""
