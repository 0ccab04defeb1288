"""The mail app (Outlook-like): folders, message lists, threads, search, send, reply, forward, move, flag, read."""
