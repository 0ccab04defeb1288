"""The calendar app: events with recurrence, free-slot search across time zones, rooms, invitations."""
