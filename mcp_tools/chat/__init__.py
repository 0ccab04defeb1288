"""The chat app (Mattermost-like): channels, history, threads, search, posts, reactions, direct messages."""
