"""Tickets from events: why a ticket exists decides its title, its description and the comments on its life.

A ``TicketEvent`` is the typed cause of one ticket: a bug report on component X of project P by reporter R
(with the trigger, the affected segment, the environment, and the cause and fix the assignee will find), a
piece of planned work, a user story, an incident or an epic. The ticket's title and description are written
from the event by the reporter in their own style; each status change the workflow walks through is a moment
someone may comment on, and the comment says what that moment means for *this* event (the cause found when
work starts, the fix when it goes to review, the blocking ticket when it is blocked, the reason when it is
dropped). Chat posts and mail that later discuss the ticket read the same event, so they name the same
component, symptom and fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from worlds.generate import vocab
from worlds.generate.language import Dice, Style, cap, chat_voice, one_of


@dataclass(kw_only=True)
class TicketEvent:
    """The cause of one ticket, and what its assignee will find out about it."""

    kind: str
    family: str
    component: str
    title: str = ""
    slots: dict[str, str] = field(default_factory=dict)
    cause: str = ""
    fix: str = ""
    customer: str = ""

    @property
    def summary(self) -> str:
        """A short lower-case phrase for the ticket, as people refer to it in passing."""
        return self.title[:1].lower() + self.title[1:] if not self.title[:2].isupper() else self.title


def project_components(rng: Dice, family: str, n: int = 8) -> list[str]:
    """The components one project works on (a project sees the same few things again and again)."""
    pool = list(vocab.COMPONENTS[family])
    out: list[str] = []
    while pool and len(out) < n:
        out.append(pool.pop(rng.integers(len(pool))))
    return out


def ticket_event(rng: Dice, family: str, kind: str, components: list[str], customers: list[str]) -> TicketEvent:
    """Draw the event behind a new ticket of ``kind`` in a project of ``family``."""
    c = str(rng.pick(components))
    slots = {
        "c": c,
        "C": cap(c),
        "trig": rng.pick(vocab.TRIGGERS),
        "ev": rng.pick(vocab.EVENTS),
        "field": rng.pick(vocab.FIELDS),
        "seg": rng.pick(vocab.SEGMENTS),
        "env": rng.pick(vocab.ENVS),
        "feat": rng.pick(vocab.FEATURES),
        "tech": rng.pick(vocab.TECH),
        "old": rng.pick(vocab.OLD),
        "lib": rng.pick(vocab.LIBS),
        "topic": rng.pick(vocab.TOPICS),
        "persona": rng.pick(vocab.PERSONAS),
        "goal": rng.pick(vocab.GOALS),
        "cust": rng.pick(customers) if customers else "a key customer",
        "n": str(rng.integers(2, 40)),
    }
    slots["Persona"] = cap(slots["persona"].split(" ", 1)[1])
    ev = TicketEvent(kind=kind, family=family, component=c, slots=slots, customer=slots["cust"])
    cause, fix = rng.pick(vocab.CAUSES)
    ev.cause, ev.fix = str(cause), str(fix)
    if family != "eng" and kind in ("bug", "incident"):
        kind = ev.kind = "task"
    if kind == "bug":
        template = rng.pick(vocab.BUG_TITLES)
    elif kind == "incident":
        template = rng.pick(vocab.INCIDENT_TITLES)
    elif kind == "epic":
        template = rng.pick(vocab.EPIC_THEMES)
    elif kind == "story" and family in ("eng", "product"):
        template = rng.pick(vocab.STORY_TITLES)
    else:
        template = rng.pick(vocab.WORK_TITLES[family])
    ev.title = cap(str(template).format(**slots))
    return ev


def describe(rng: Dice, ev: TicketEvent, style: Style, reporter: str) -> str:
    """The description the reporter writes for the event, shaped by their register."""
    s = ev.slots
    if ev.kind == "bug":
        steps = [
            one_of(rng, f"Open the {s['c']}", f"Go to the {s['c']}", f"Start from the {s['c']}"),
            one_of(rng, f"Make sure {s['trig']}", f"Repeat it so that {s['trig']}", f"Wait until {s['trig']}"),
            one_of(rng, "Save and reload", "Check the result", "Look at the response", "Refresh the view"),
        ]
        expected = one_of(
            rng, f"the {s['field']} is right", "the change is kept", "a clear error message", "the page loads"
        )
        actual = one_of(rng, ev.title[:1].lower() + ev.title[1:], f"the {s['field']} is wrong", "a blank page")
        impact = one_of(
            rng,
            f"{s['cust']} reported it; it affects {s['seg']}.",
            f"Seen for {s['seg']}, about {s['n']} tickets to support this week.",
            f"It hits {s['seg']} on {s['env']}.",
            f"{s['cust']} is waiting on this before their renewal.",
        )
        if style.register == "terse":
            repro = "; ".join(step.lower() for step in steps)
            return f"Repro: {repro}. Expected {expected}, got {actual}. {impact}"
        if style.register == "chatty":
            lead = one_of(
                rng,
                f"Ran into this while helping {s['cust']} today.",
                f"Not sure how long this has been going on, but {s['trig']} breaks things.",
                f"Spotted this right after {s['ev']}.",
            )
            return (
                f"{lead} {impact}\n\nTo reproduce: {steps[0].lower()}, then {steps[1].lower()}, then "
                f"{steps[2].lower()}. I expected {expected} but got {actual}. Happy to pair on it - {reporter}"
            )
        numbered = "\n".join(f"{i}. {step}." for i, step in enumerate(steps, start=1))
        return (
            f"Summary: {ev.title}.\n\nSteps to reproduce:\n{numbered}\n\nExpected: {cap(expected)}.\n"
            f"Actual: {cap(actual)}.\n\nEnvironment: {s['env']}.\nImpact: {impact}"
        )
    if ev.kind == "incident":
        return (
            f"{one_of(rng, 'Alert fired', 'On-call was paged', 'Support escalated')} for the {s['c']}. "
            f"{one_of(rng, 'Started after', 'First seen shortly after', 'Correlates with')} {s['ev']}. "
            f"Impact: {s['seg']}. {one_of(rng, 'Updates in ~incidents.', 'Timeline in ~incidents.')}"
        )
    if ev.kind == "epic":
        motive = one_of(
            rng,
            f"{s['seg']} keep running into limits of the {s['c']}",
            f"{s['cust']} and others asked for it",
            f"the {s['c']} is our top source of support tickets",
        )
        return (
            f"{cap(ev.title)}. {one_of(rng, 'Why:', 'Goal:', 'Motivation:')} {motive}. "
            f"Child tickets follow; first milestone is {s['feat']}."
        )
    why = one_of(
        rng,
        f"{s['cust']} asked for {s['feat']} in the {s['c']} during their last review",
        f"{s['seg']} keep asking support about {s['topic']}",
        f"the {s['c']} still depends on {s['old']}",
        f"it came up in the retro as a recurring pain with the {s['c']}",
        f"we keep answering the same question about {s['topic']}",
        f"it unblocks the {s['feat']} work next sprint",
        f"the audit flagged the {s['c']}",
    )
    done_when = one_of(
        rng,
        f"the {s['c']} covers {s['topic']}",
        f"{s['persona']} can {s['goal']}",
        f"the change to the {s['c']} is live and announced to {s['seg']}",
        f"{s['cust']} signs off on the {s['c']}",
        f"nobody has to ask about {s['topic']} again",
    )
    note = one_of(
        rng,
        f"Out of scope: {s['feat']}.",
        f"Watch out for {s['topic']}.",
        f"Related work on the {s['c']} happened after {s['ev']}.",
        f"Check with {s['cust']} before changing anything for {s['seg']}.",
        "",
    )
    if style.register == "terse":
        return f"{cap(why)}. Done when {done_when}. {note}".strip()
    if style.register == "chatty":
        return f"Context: {why}. I'd call it done when {done_when}. {note} Ping me ({reporter}) with questions!"
    return (
        f"Background: {cap(why)}.\n\nAcceptance criteria: {cap(done_when)}.\n\n{note}\n\nRequested by {reporter}."
    ).replace("\n\n\n\n", "\n\n")


def comment(rng: Dice, ev: TicketEvent, status: str, style: Style, blocker: str = "") -> str | None:
    """What someone says on the ticket when it enters ``status``, or None when nobody comments."""
    s = ev.slots
    eng = ev.kind in ("bug", "incident")
    if status == "in_progress":
        if eng:
            text = one_of(
                rng,
                f"Reproduced on {s['env']}. Looks like {ev.cause}.",
                f"Found it: {ev.cause}.",
                f"Taking this. First guess is {ev.cause}, checking now.",
                f"Can reproduce when {s['trig']}; suspect {ev.cause}.",
            )
        else:
            text = one_of(
                rng,
                f"Starting on this; first pass on the {s['c']} today.",
                f"Picked it up. Will start with {s['topic']} and then the {s['c']}.",
                f"On it - talking to {s['cust']} first about the {s['c']}.",
                f"Started. Draft of the {s['c']} changes by end of week.",
            )
    elif status == "in_review":
        text = (
            one_of(
                rng,
                f"Fix is up for review: {ev.fix}.",
                f"PR ready - the change is to {ev.fix}.",
                f"Up for review. Approach: {ev.fix}; tests added.",
            )
            if eng
            else one_of(
                rng,
                f"Draft ready for review, covers {s['topic']} in the {s['c']}.",
                f"Ready for a look - updated the {s['c']} for {s['seg']}.",
                f"Done on my side; could someone check the {s['topic']} part before it goes to {s['cust']}?",
                f"First version of the {s['c']} changes is ready; {s['feat']} is left out on purpose.",
            )
        )
    elif status == "blocked":
        if not blocker:
            return None
        text = one_of(
            rng,
            f"Blocked on {blocker} - can't continue until it lands.",
            f"Waiting for {blocker} first; it changes the {s['c']} too.",
            f"Parking this until {blocker} is done; same area of the {s['c']}.",
        )
    elif status == "done":
        if rng.chance(0.4):
            return None
        text = (
            one_of(
                rng,
                f"Verified on staging: {ev.summary} no longer happens.",
                f"Deployed. Confirmed with {s['cust']} that the {s['c']} works again on {s['env']}.",
                f"Shipped; the fix was to {ev.fix}.",
            )
            if eng
            else one_of(
                rng,
                f"Done, shared the updated {s['c']} with {s['cust']}.",
                f"Done and announced; {s['seg']} were told about {s['topic']}.",
                f"Closed, the {s['c']} now covers {s['topic']}.",
            )
        )
    elif status == "wont_do":
        after = one_of(
            rng,
            f"The {s['c']} stays as it is.",
            f"If {s['seg']} complain again, reopen.",
            f"Told {s['cust']}.",
            f"Notes on {s['topic']} kept in the description.",
        )
        text = f"Closing {one_of(rng, 'this', 'this one', 'for now')}: {rng.pick(vocab.WONT_DO)}. {after}"
    elif status == "todo":
        if rng.chance(0.6):
            return None
        text = one_of(
            rng,
            f"Pulled into the sprint since it affects {s['seg']} using the {s['c']}.",
            f"Prioritised after the call with {s['cust']} about the {s['c']}.",
            f"Moving up: it's the third report about the {s['c']} this month.",
        )
    else:
        return None
    if style.register == "formal":
        text = text.replace(" - ", ": ")
    return chat_voice(rng, style, text)
