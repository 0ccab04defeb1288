"""The mail app on the tiny company (see conftest) plus mailboxes, documents and one seeded message.

Mail rows added here: a mailbox with the five default folders for each of the six people (mailbox id =
employee id, ``<username>@acme.test``) and for one generated-style external customer (id 7,
``ops@customer-northwind.example``); documents 1 (Lena's), 2 (Cora's, shared with Lena), 3 (Cora's, private);
message 1 in thread 1 ("Budget 100%"): Cora -> to Lena, cc dev.one, bcc olaf.out, with document 3 attached.
"""

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import insert, select

from mcp_tools.base import Actor, call_tool
from mcp_tools.errors import AppError
from mcp_tools.mail.server import mail
from worlds.schema import (
    DocFolder,
    Document,
    DocumentShare,
    Employee,
    Mailbox,
    MailDelivery,
    MailFolder,
    MailMessage,
    MailRecipient,
    MailThread,
)
from worlds.schema.mail import DEFAULT_FOLDERS

SPECS = {s.name: s for s in mail.specs}
EXTERNAL = "ops@customer-northwind.example"
T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)  # the tiny company's clock (conftest.T0)


def folder_id(box, name):
    return (box - 1) * len(DEFAULT_FOLDERS) + DEFAULT_FOLDERS.index(name) + 1


@pytest.fixture
def world(app):
    """The tiny company with mail and documents (rows inserted in bulk, so the change log starts empty)."""
    s = app.session
    assert app.clock.now() == T0
    people = s.execute(select(Employee.id, Employee.username, Employee.first_name).order_by(Employee.id)).all()
    boxes = [dict(id=i, address=f"{u}@acme.test", display_name=name, employee_id=i) for i, u, name in people]
    boxes.append(dict(id=7, address=EXTERNAL, display_name="customer-northwind ops", employee_id=None))
    s.execute(insert(Mailbox), boxes)
    s.execute(
        insert(MailFolder),
        [dict(id=folder_id(b["id"], n), mailbox_id=b["id"], name=n) for b in boxes for n in DEFAULT_FOLDERS],
    )
    s.execute(insert(DocFolder), [dict(id=1, parent_id=None, name="Shared", owner_id=1, created_at=T0)])
    s.execute(
        insert(Document),
        [
            dict(
                id=d,
                folder_id=1,
                name=name,
                kind="text",
                mime_type="text/plain",
                owner_id=owner,
                content={"sections": []},
                blob_sha256=None,
                version=1,
                created_at=T0,
                updated_at=T0,
            )
            for d, name, owner in [(1, "plan.txt", 2), (2, "budget.xlsx", 1), (3, "salaries.xlsx", 1)]
        ],
    )
    s.execute(insert(DocumentShare), [dict(id=1, document_id=2, employee_id=2, permission="view")])
    at = T0 - timedelta(hours=2)
    s.execute(insert(MailThread), [dict(id=1, subject="Budget 100%", created_at=at)])
    s.execute(
        insert(MailMessage),
        [
            dict(
                id=1,
                thread_id=1,
                message_id="<m1.7@acme.test>",
                in_reply_to_id=None,
                sender_mailbox_id=1,
                subject="Budget 100%",
                body="Numbers attached.",
                sent_at=at,
                attachment_document_ids=[3],
            )
        ],
    )
    s.execute(
        insert(MailRecipient),
        [dict(message_id=1, mailbox_id=b, kind=k) for b, k in [(2, "to"), (3, "cc"), (5, "bcc")]],
    )
    s.execute(
        insert(MailDelivery),
        [
            dict(message_id=1, mailbox_id=b, folder_id=folder_id(b, f), is_read=r, is_flagged=False, read_at=None)
            for b, f, r in [(1, "Sent", True), (2, "Inbox", False), (3, "Inbox", False), (5, "Inbox", False)]
        ],
    )
    s.flush()
    return app


def call(app, actor, tool, **args):
    return call_tool(SPECS[f"mail_{tool}"], args, app.ctx(actor))


def dev_two(app):
    """dev.one's teammate: on no seeded message."""
    return Actor.load(app.session, "dev.two")


def refused(fn):
    with pytest.raises(AppError) as info:
        fn()
    return info.value.code, str(info.value)


def deliveries(app):
    """Every delivery as (message, mailbox, folder, read, flagged, read_at), by id."""
    cols = (MailDelivery.id, MailDelivery.message_id, MailDelivery.mailbox_id, MailDelivery.folder_id)
    more = (MailDelivery.is_read, MailDelivery.is_flagged, MailDelivery.read_at)
    return {r[0]: tuple(r[1:]) for r in app.session.execute(select(*cols, *more).order_by(MailDelivery.id))}


def test_send__lands_in_every_inbox_and_the_senders_sent_folder(world):
    app = world
    sent = call(
        app,
        app.lead,
        "send",
        to="dev.one, new@partner.example",
        cc="Dario Two <dev.two@acme.test>",
        bcc="@olaf.out",
        subject="Release",
        body="Ship it Friday.",
        attachments="1, 2",
    )
    assert sent["folder"] == "Sent" and sent["is_read"] and sent["message_id"] == f"<m{sent['id']}@acme.test>"
    assert (sent["to"], sent["cc"], sent["bcc"]) == (
        ["dev.one@acme.test", "new@partner.example"],
        ["dev.two@acme.test"],
        ["olaf.out@acme.test"],
    )
    assert [a["id"] for a in sent["attachments"]] == [1, 2] and sent["sent_at"] == T0.isoformat()
    for actor in (app.dev, app.outsider):
        inbox = call(app, actor, "list_messages", folder="Inbox")["messages"]
        assert inbox[0]["id"] == sent["id"] and not inbox[0]["is_read"] and inbox[0]["has_attachments"]
    dev_two = app.session.scalar(select(MailDelivery.folder_id).where(MailDelivery.mailbox_id == 4))
    assert dev_two == folder_id(4, "Inbox")
    assert call(app, app.lead, "list_messages", folder="sent")["messages"][0]["id"] == sent["id"]
    # The new external address gets a mailbox (for the recipient row) but no delivery.
    ext = app.session.scalar(select(Mailbox).where(Mailbox.address == "new@partner.example"))
    assert ext.employee_id is None
    held = app.session.scalars(select(MailDelivery.mailbox_id).where(MailDelivery.message_id == sent["id"])).all()
    assert sorted(held) == [2, 3, 4, 5]
    tables = [(c.table_name, c.op) for c in app.log()]
    assert ("mail_messages", "insert") in tables and ("mailboxes", "insert") in tables


def test_send__to_a_known_external_mailbox_delivers_to_its_inbox_like_generated_mail(world):
    app = world
    sent = call(app, app.lead, "send", to=EXTERNAL.upper(), subject="Renewal", body="")
    box = app.session.scalar(
        select(MailDelivery.folder_id).where(MailDelivery.message_id == sent["id"], MailDelivery.mailbox_id == 7)
    )
    assert sent["to"] == [EXTERNAL] and box == folder_id(7, "Inbox")


def test_bcc__is_shown_to_the_sender_and_to_the_bcc_recipient_only_as_themselves(world):
    app = world
    assert call(app, app.ceo, "read_message", message_id=1)["bcc"] == ["olaf.out@acme.test"]
    assert call(app, app.outsider, "read_message", message_id=1)["bcc"] == ["olaf.out@acme.test"]
    for actor in (app.lead, app.dev):
        seen = call(app, actor, "read_message", message_id=1)
        assert seen["bcc"] == [] and "olaf" not in str(seen)
    thread = call(app, app.lead, "read_thread", thread_id=1)
    assert "olaf" not in str(thread)


def test_reply__threads_with_in_reply_to_and_one_re_prefix(world):
    app = world
    first = call(app, app.lead, "reply", message_id=1, body="Looks fine.")
    assert (first["thread_id"], first["in_reply_to"], first["subject"]) == (1, 1, "Re: Budget 100%")
    assert (first["to"], first["cc"], first["bcc"], first["attachments"]) == (["cora.ceo@acme.test"], [], [], [])
    app.clock.set(T0 + timedelta(minutes=5))
    second = call(app, app.ceo, "reply", message_id=first["id"], body="Thanks.")
    assert (second["thread_id"], second["in_reply_to"], second["subject"]) == (1, first["id"], "Re: Budget 100%")
    assert second["to"] == ["lena.lead@acme.test"]
    thread = call(app, app.ceo, "read_thread", thread_id=1)["messages"]
    assert [m["id"] for m in thread] == [1, first["id"], second["id"]]
    # dev.one was only on the first message: the thread shows them just that one.
    assert [m["id"] for m in call(app, app.dev, "read_thread", thread_id=1)["messages"]] == [1]


def test_reply_all__reaches_sender_to_and_cc_but_not_self_or_bcc(world):
    app = world
    got = call(app, app.dev, "reply_all", message_id=1, body="+1")
    assert (got["to"], got["cc"], got["bcc"]) == (["cora.ceo@acme.test", "lena.lead@acme.test"], [], [])
    held = app.session.scalars(select(MailDelivery.mailbox_id).where(MailDelivery.message_id == got["id"])).all()
    assert sorted(held) == [1, 2, 3]
    mine = call(app, app.ceo, "reply_all", message_id=1, body="Reminder")  # own message: its recipients again
    assert (mine["to"], mine["cc"]) == (["lena.lead@acme.test"], ["dev.one@acme.test"])


def test_forward__keeps_attachments_quotes_the_original_and_starts_a_thread(world):
    app = world
    fwd = call(app, app.lead, "forward", message_id=1, to="dev.two", body="FYI", attachments="1")
    assert fwd["subject"] == "Fwd: Budget 100%" and fwd["thread_id"] != 1 and fwd["in_reply_to"] is None
    assert [a["id"] for a in fwd["attachments"]] == [3, 1]  # document 3 is Cora's, but Lena received it
    assert fwd["body"].startswith("FYI") and "Numbers attached." in fwd["body"] and "olaf" not in fwd["body"]
    again = call(app, dev_two(app), "forward", message_id=fwd["id"], to="dev.one")
    assert again["subject"] == "Fwd: Budget 100%" and [a["id"] for a in again["attachments"]] == [3, 1]


def test_move_flag_mark_read__change_only_that_delivery_and_are_logged(world):
    app = world
    before = deliveries(app)
    mine = next(k for k, v in before.items() if v[0] == 1 and v[1] == 2)
    moved = call(app, app.lead, "move", message_id=1, folder="archive")
    flagged = call(app, app.lead, "flag", message_id=1, flagged=True)
    read = call(app, app.lead, "mark_read", message_id=1)
    assert (moved["folder"], flagged["is_flagged"], read["is_read"]) == ("Archive", True, True)
    assert call(app, app.lead, "mark_read", message_id=1)["changed"] is False
    after = deliveries(app)
    assert {k: v for k, v in after.items() if k != mine} == {k: v for k, v in before.items() if k != mine}
    assert after[mine][2:5] == (folder_id(2, "Archive"), True, True) and after[mine][5] is not None
    log = [(c.table_name, c.row_key, c.op, sorted(c.changes)) for c in app.log()]
    assert log == [
        ("mail_deliveries", f"[{mine}]", "update", ["folder_id"]),
        ("mail_deliveries", f"[{mine}]", "update", ["is_flagged"]),
        ("mail_deliveries", f"[{mine}]", "update", ["is_read", "read_at"]),
    ]
    call(app, app.lead, "mark_read", message_id=1, read=False)
    assert deliveries(app)[mine][3:] == (False, True, None)
    assert call(app, app.dev, "read_message", message_id=1)["folder"] == "Inbox"  # dev.one's copy did not move


def test_folders__counts_and_a_created_folder_can_receive_messages(world):
    app = world
    folders = call(app, app.lead, "list_folders")["folders"]
    assert [f["name"] for f in folders] == list(DEFAULT_FOLDERS)
    assert folders[0] == {"name": "Inbox", "total": 1, "unread": 1}
    assert call(app, app.lead, "create_folder", name="Budget")["name"] == "Budget"
    call(app, app.lead, "move", message_id=1, folder="Budget")
    folders = call(app, app.lead, "list_folders")["folders"]
    assert folders[0]["total"] == 0 and folders[-1] == {"name": "Budget", "total": 1, "unread": 1}


def test_list_and_search__newest_first_literal_and_paged(world):
    app = world
    for n in range(3):
        app.clock.set(T0 + timedelta(minutes=n))
        call(app, app.ceo, "send", to="lena.lead", subject=f"Note {n} 100_x", body="see budget")
    inbox = call(app, app.lead, "list_messages", limit=2, offset=1)
    assert inbox["total"] == 4 and [m["subject"] for m in inbox["messages"]] == ["Note 1 100_x", "Note 0 100_x"]
    call(app, app.lead, "mark_read", message_id=1)
    assert call(app, app.lead, "list_messages", unread_only=True)["total"] == 3
    assert [m["id"] for m in call(app, app.lead, "search", text="100%")["messages"]] == [1]
    assert len(call(app, app.lead, "search", text="100_")["messages"]) == 3
    assert call(app, app.lead, "search", text="1%0")["messages"] == []
    assert len(call(app, app.lead, "search", text="BUDGET", sender="cora", folder="Inbox")["messages"]) == 4
    assert call(app, app.lead, "search", text="budget", folder="Sent")["messages"] == []


def test_read_tools__leave_the_state_unchanged_and_do_not_mark_read(world):
    app = world
    h = app.hash()
    call(app, app.lead, "list_folders")
    call(app, app.lead, "list_messages", folder="Inbox", unread_only=True)
    assert call(app, app.lead, "read_message", message_id=1)["is_read"] is False
    call(app, app.lead, "read_thread", thread_id=1)
    call(app, app.lead, "search", text="budget")
    assert app.hash() == h and app.log() == []
    assert {s.name for s in mail.specs if s.kind == "read"} == {
        "mail_list_folders",
        "mail_list_messages",
        "mail_read_message",
        "mail_read_thread",
        "mail_search",
    }


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read_message", {"message_id": 1}),
        ("read_thread", {"thread_id": 1}),
        ("reply", {"message_id": 1, "body": "x"}),
        ("reply_all", {"message_id": 1, "body": "x"}),
        ("forward", {"message_id": 1, "to": "dev.one"}),
        ("move", {"message_id": 1, "folder": "Archive"}),
        ("flag", {"message_id": 1}),
        ("mark_read", {"message_id": 1}),
    ],
)
def test_someone_elses_message__is_not_found_like_a_missing_one(world, tool, args):
    app = world
    h = app.hash()
    code, hidden = refused(lambda: call(app, dev_two(app), tool, **args))
    key = next(iter(args))
    missing = refused(lambda: call(app, app.lead, tool, **{**args, key: 999}))
    assert code == missing[0] == "not_found"
    assert hidden == missing[1].replace("999", "1")
    assert app.hash() == h


TOO_MANY = ", ".join(f"p{i}@partner.example" for i in range(51))


@pytest.mark.parametrize(
    ("tool", "args", "code"),
    [
        ("send", {"to": "", "subject": "s", "body": "b"}, "invalid_argument"),
        ("send", {"to": "dev.one, bad@@address", "subject": "s", "body": "b"}, "invalid_argument"),
        ("send", {"to": "new@partner.example, nobody.here", "subject": "s", "body": "b"}, "not_found"),
        ("send", {"to": "ghost@acme.test", "subject": "s", "body": "b"}, "not_found"),
        ("send", {"to": "dev.one", "subject": " ", "body": "\n"}, "invalid_argument"),
        ("send", {"to": "dev.one", "subject": "a\nBcc: x", "body": "b"}, "invalid_argument"),
        ("send", {"to": "dev.one", "subject": "s" * 301, "body": "b"}, "invalid_argument"),
        ("send", {"to": "dev.one", "subject": "s", "body": "b" * 16_001}, "invalid_argument"),
        ("send", {"to": TOO_MANY, "subject": "s", "body": "b"}, "invalid_argument"),
        ("send", {"to": "dev.one", "subject": "s", "body": "b", "attachments": "1, x"}, "invalid_argument"),
        ("send", {"to": "dev.one", "subject": "s", "body": "b", "attachments": "1, 99"}, "not_found"),
        ("send", {"to": "dev.one", "subject": "s", "body": "b", "attachments": "1, 3"}, "forbidden"),
        ("reply", {"message_id": 1, "body": "  "}, "invalid_argument"),
        ("reply", {"message_id": 1, "body": "x", "attachments": "3"}, "forbidden"),
        ("forward", {"message_id": 1, "to": "dev.two, nope"}, "not_found"),
        ("forward", {"message_id": 1, "to": ""}, "invalid_argument"),
        ("list_messages", {"folder": "Nope"}, "not_found"),
        ("list_messages", {"limit": 0}, "invalid_argument"),
        ("list_messages", {"limit": 101}, "invalid_argument"),
        ("list_messages", {"offset": -1}, "invalid_argument"),
        ("search", {"text": " "}, "invalid_argument"),
        ("search", {"text": "x", "folder": "Nope"}, "not_found"),
        ("move", {"message_id": 1, "folder": "Nope"}, "not_found"),
        ("create_folder", {"name": "inbox"}, "conflict"),
        ("create_folder", {"name": " "}, "invalid_argument"),
        ("create_folder", {"name": "x" * 101}, "invalid_argument"),
        ("read_message", {"message_id": 999}, "not_found"),
        ("flag", {"message_id": 1, "flagged": "yes"}, "invalid_argument"),
    ],
)
def test_bad_input__gives_the_code_and_changes_nothing(world, tool, args, code):
    app = world
    h = app.hash()
    got, message = refused(lambda: call(app, app.lead, tool, **args))
    assert got == code, message
    assert app.hash() == h and app.log() == []


def test_actor_without_a_mailbox__is_not_found(app):
    assert refused(lambda: call(app, app.lead, "list_folders"))[0] == "not_found"
