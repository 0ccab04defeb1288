"""The world schema: one module per bounded context, all on one ``Base.metadata``."""

from worlds.schema.access import AccessRequest
from worlds.schema.base import Base, UTCDateTime
from worlds.schema.calendar import Event, EventAttendee, Room
from worlds.schema.chat import Channel, ChannelMember, ChatFile, ChatTeam, Mention, Post, Reaction
from worlds.schema.documents import Blob, DocFolder, Document, DocumentShare, DocumentVersion
from worlds.schema.git import GitActivity, MergeRequest, MergeRequestNote, Repository, RepositoryRef
from worlds.schema.mail import Mailbox, MailDelivery, MailFolder, MailMessage, MailRecipient, MailThread
from worlds.schema.meta import ChangeLog, WorldMeta
from worlds.schema.npcs import NpcMemory, NpcPersona
from worlds.schema.org import (
    Company,
    Department,
    Employee,
    EmployeePrivate,
    EmployeeRole,
    Location,
    ReportingChange,
    Team,
)
from worlds.schema.projects import Milestone, Project, ProjectMember
from worlds.schema.tickets import Sprint, Ticket, TicketComment, TicketLabel, TicketLink, TicketStatusChange

__all__ = [
    "AccessRequest",
    "Base",
    "Blob",
    "ChangeLog",
    "Channel",
    "ChannelMember",
    "ChatFile",
    "ChatTeam",
    "Company",
    "Department",
    "DocFolder",
    "Document",
    "DocumentShare",
    "DocumentVersion",
    "Employee",
    "EmployeePrivate",
    "EmployeeRole",
    "Event",
    "EventAttendee",
    "GitActivity",
    "Location",
    "MailDelivery",
    "MailFolder",
    "MailMessage",
    "MailRecipient",
    "MailThread",
    "Mailbox",
    "MergeRequest",
    "MergeRequestNote",
    "Mention",
    "Milestone",
    "NpcMemory",
    "NpcPersona",
    "Post",
    "Project",
    "ProjectMember",
    "Reaction",
    "ReportingChange",
    "Repository",
    "RepositoryRef",
    "Room",
    "Sprint",
    "Team",
    "Ticket",
    "TicketComment",
    "TicketLabel",
    "TicketLink",
    "TicketStatusChange",
    "UTCDateTime",
    "WorldMeta",
]
