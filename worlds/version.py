"""Versions recorded in every world.

``SCHEMA_VERSION`` changes whenever a table or column changes; ``GENERATOR_VERSION`` changes whenever the same
spec would generate different content. Both are part of the base-world cache key, and a world written by a
newer version than this code knows is refused on open rather than misread.
"""

from __future__ import annotations

# Schema history: 1 the first tables; 2 access_requests; 3 repository_refs, merge requests and their notes,
# git_activity, npc_personas and npc_memory; 4 chat_files (uploads attached to posts); 5 reporting_changes (a
# reorg's moves, so history can name the manager of its time) and employees.leave_date (the last day of a
# generated leaver).
SCHEMA_VERSION = 5
# Generator history: 1 the first generator; 2 documents are real DOCX/ODT/XLSX/ODS files in blobs, with
# content referring to people, projects and tickets, and a roadmap spreadsheet; 3 tickets, comments, chat posts
# and mail written from events (a ticket's cause, its status changes, hires, releases, customer cases, invoices)
# in each employee's own style, with customer and vendor mailboxes; any headcount from 1 (project keys stay
# letters), documents name tickets filed by their date, budgets follow payroll; 4 every post, mail, ticket
# comment and status change in its author's working hours and time zone, tickets numbered in filing order,
# weekly notes at the team's calendar time whose action items are tickets their owners file afterwards,
# resolved incidents with an ~incidents thread (open, update, resolution) and a postmortem document,
# release notes and an announcement for each reached milestone naming the tickets done by then; 5 merge requests
# from ticket events (opened on review by the assignee, reviewed and merged by teammates before done, named on
# the ticket), each resolved incident's fix named in its postmortem, and repository histories holding each
# request's key-named commits and merge commit;
# and a reorg (a team lead hands over to a senior engineer, announced by mail and chat, with 1:1s, weeklies, notes
# and manager mail naming the manager of their time), quarterly budgets from each quarter's headcount and payroll,
# and expense receipts mailed to finance that the quarter's actuals sheet lists line by line; and leavers (~1.5%
# over 90 days: inactive with a last day, a goodbye post and the manager's mail, open tickets handed over, no
# channel memberships, nothing of theirs after that day).
GENERATOR_VERSION = 5
