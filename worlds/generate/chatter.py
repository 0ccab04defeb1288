"""Chat posts from events: each post is about something that happened in its channel's world before it.

A post in a team or project channel is about one of that team's tickets as it stood at the time of the post
(picked up, cause found, up for review, blocked, shipped), written by the ticket's assignee when they are in
the channel, or a question about it from someone else; a stand-up lists the author's own tickets. ~incidents
carries incidents and critical bugs from first report to fix. ~town-square welcomes people whose hire date
falls in the history, ~announcements announces projects' finished work. Threads answer their root's
intent: a question gets answers, a review request gets a review, an announcement gets thanks.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from worlds.generate import vocab
from worlds.generate.common import Gen
from worlds.generate.language import Dice, Style, cap, chat_voice, one_of, say
from worlds.generate.stories import TicketEvent


@dataclass(kw_only=True)
class Root:
    """A root post and what a reply to it would be for."""

    message: str
    replies: str  # answer | review | thanks | incident | chat
    mentioned: list[int]
    event: TicketEvent | None = None
    key: str = ""
    question: int = -1
    slots: dict[str, str] | None = None


SOCIAL = (
    "Anyone up for {food} at {time_of_day}?",
    "Recommendations for {thing} in {city}? Asking for a friend who just moved.",
    "The {place} on the third floor is {state} again.",
    "Who left a {item} in the {place}? It's been there since {day}.",
    "Finished {book} over the weekend, highly recommend it.",
    "Reminder that the {club} meets {day} after work, all welcome.",
    "Photos from the {outing} are in the shared album.",
    "Is it just me or is the wifi in the {place} slow today?",
    "Our cat walked across my keyboard during the {meeting}, apologies to everyone on the call.",
    "Trying to get a {sport} team together for {day}, need {n} more people.",
)
SOCIAL_SLOTS = {
    "food": ("ramen", "tacos", "dumplings", "the salad place", "pizza", "the food trucks", "pho", "falafel"),
    "time_of_day": ("noon", "12:30", "1pm", "half past twelve"),
    "thing": ("a dentist", "a bike shop", "running routes", "a quiet cafe to work from", "a good barber"),
    "place": ("kitchen", "phone booth", "big meeting room", "quiet room", "lounge", "printer corner"),
    "state": ("out of oat milk", "double-booked", "locked", "freezing", "full of boxes"),
    "item": ("blue umbrella", "lunch box", "laptop charger", "pair of headphones", "water bottle"),
    "day": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday"),
    "book": ("Project Hail Mary", "The Phoenix Project", "Thinking, Fast and Slow", "Piranesi", "Klara and the Sun"),
    "club": ("book club", "running club", "board game night", "chess club", "climbing group"),
    "outing": ("team dinner", "hackathon", "summer picnic", "bowling night", "volunteering day"),
    "meeting": ("all-hands", "sprint review", "planning call", "design crit"),
    "sport": ("five-a-side", "volleyball", "ultimate frisbee", "basketball"),
}
NOTICES = (
    "The {city} office is closed on {day} for maintenance; please work from home.",
    "All-hands moves to {day} this week, same time. Questions for the Q&A go in the form.",
    "New expense tool goes live {day}; old receipts still go through the old flow until month-end.",
    "Security reminder: never share login codes, IT will never ask for them.",
    "Open enrolment for benefits closes {day}. Ping people-ops with questions.",
    "We're running a fire drill in {city} on {day} morning.",
    "Laptop refresh: if your machine is over three years old, IT will reach out this month.",
)
# A question about a component, why it is asked, and answers someone who knows would give.
QUESTIONS = (
    (
        "who owns the {c} these days",
        "a customer question",
        ("the {team} team owns the {c} since the reorg", "ask in the {team} channel, they took over the {c}"),
    ),
    (
        "whether the {c} has a staging copy",
        "testing {feat}",
        ("yes, staging mirrors prod for the {c} nightly", "there is one, but its data is a month old"),
    ),
    (
        "where the runbook for the {c} lives",
        "my on-call shift",
        ("the {c} runbook is pinned in the {team} channel", "it's in the on-call folder, section 'paging'"),
    ),
    (
        "if the {c} supports {feat}",
        "a deal with {cust}",
        ("{feat} is on the roadmap for the {c} but not built yet", "only behind a flag, ask the {team} team"),
    ),
    (
        "how the {c} handles {topic}",
        "the spec I'm writing",
        ("the {c} leaves {topic} to the caller", "there's a section on {topic} in the {c} design doc"),
    ),
    (
        "whether anyone changed the {c} config last week",
        "an odd alert",
        ("nothing changed in the {c} config, that alert is flaky", "yes, the {team} team raised a limit on Thursday"),
    ),
)


def _fill(rng: Dice, template: str, **extra: str) -> str:
    slots = {k: str(rng.pick(v)) for k, v in SOCIAL_SLOTS.items() if "{" + k + "}" in template}
    slots.update(extra)
    slots.setdefault("n", str(rng.integers(2, 6)))
    return template.format(**slots)


class ChatWriter:
    """Writes the posts of one world; one instance per ``build_chat``."""

    def __init__(self, g: Gen, rng: Dice) -> None:
        self.g = g
        self.rng = rng
        self.emps = g.rows["employees"]
        self.tickets = g.rows.get("tickets", [])
        self.by_key = {t["key"]: t for t in self.tickets}
        self.cities = [loc["name"] for loc in g.rows["locations"] if loc["name"] != "Remote"] or ["main"]
        self.customers = [c[0] for c in g.customers] or ["a key customer"]
        teams = g.rows.get("teams", [])
        self.team_names = [t["name"] for t in teams] or [g.company_name]
        hires = sorted((e["hire_date"], e["id"]) for e in self.emps if e["hire_date"] >= g.history_start.date())
        self.hires = hires
        self.hire_days = [h[0] for h in hires]
        self.releases: dict[int, int] = {}

    def style(self, who: int) -> Style:
        """How ``who`` writes."""
        return self.g.styles[who - 1]  # type: ignore[no-any-return]

    def user(self, who: int) -> str:
        """The @-handle of ``who``."""
        return str(self.emps[who - 1]["username"])

    def root(self, name: str, at: datetime, author: int, members: list[int], tickets: list[tuple[Any, str]]) -> Root:
        """A root post in channel ``name`` by ``author`` at ``at``."""
        rng = self.rng
        i = bisect.bisect_right(tickets, (at, "\uffff"))
        if name == "incidents":
            return self._incident(at, author, tickets[:i])
        if tickets and i > 0 and rng.chance(0.8):
            return self._about_ticket(at, author, members, tickets[max(0, i - 40) : i])
        if name == "off-topic":
            return Root(
                message=chat_voice(rng, self.style(author), _fill(rng, rng.pick(SOCIAL), city=rng.pick(self.cities))),
                replies="chat",
                mentioned=[],
            )
        if name == "town-square":
            return self._town_square(at, author)
        if name == "announcements":
            return self._announcement(at, author)
        return self._question(author, members)

    def _question(self, author: int, members: list[int]) -> Root:
        rng = self.rng
        i = rng.integers(len(QUESTIONS))
        q, why, _ = QUESTIONS[i]
        slots = self._slots()
        return Root(
            message=say(rng, self.style(author), "ask", q=q.format(**slots), why=why.format(**slots)),
            replies="answer",
            mentioned=[],
            question=i,
            slots=slots,
        )

    def _slots(self) -> dict[str, str]:
        rng = self.rng
        family = rng.pick(("eng", "eng", "product", "gtm", "ops"))
        return {
            "c": rng.pick(vocab.COMPONENTS[family]),
            "feat": rng.pick(vocab.FEATURES),
            "topic": rng.pick(vocab.TOPICS),
            "cust": rng.pick(self.customers),
            "team": rng.pick(self.team_names),
        }

    def _about_ticket(self, at: datetime, author: int, members: list[int], recent: list[tuple[Any, str]]) -> Root:
        rng = self.rng
        t = self.by_key[rng.pick(recent)[1]]
        ev = self.g.stories[t["id"]]
        key, style, s = t["key"], self.style(author), ev.slots
        done = t["resolved_at"] is not None and t["resolved_at"] <= at
        mine = t["assignee_id"] == author
        if rng.chance(0.12):
            return self._standup(at, author, recent)
        if done and t["status"] == "done":
            text = one_of(
                rng,
                f"{key} is out: {ev.summary} should be gone for {s['seg']}.",
                f"Shipped {key}. The fix was to {ev.fix}.",
                f"Closed {key} ({ev.summary}). Thanks everyone who helped test.",
                f"{key} done - {s['cust']} confirmed the {ev.component} works again.",
                f"Finally closed {key}: {s['seg']} can use the {ev.component} again.",
            )
            return Root(message=chat_voice(rng, style, text), replies="thanks", mentioned=[], event=ev, key=key)
        if mine:
            other = rng.pick(members)
            if other != author and rng.chance(0.5):
                text = one_of(
                    rng,
                    f"@{self.user(other)} could you review {key}? {cap(ev.fix)}."
                    if ev.kind == "bug"
                    else f"@{self.user(other)} could you take a look at {key} ({ev.summary})?",
                    f"{key} needs a reviewer, @{self.user(other)} are you free this afternoon?",
                )
                return Root(
                    message=chat_voice(rng, style, text), replies="review", mentioned=[other], event=ev, key=key
                )
            text = one_of(
                rng,
                f"Picked up {key}. First guess: {ev.cause}."
                if ev.kind == "bug"
                else f"Picked up {key}, starting with {s['topic']}.",
                f"Heads up: {key} ({ev.summary}) might slip, it's bigger than it looked.",
                f"Progress on {key}: can reproduce when {s['trig']}."
                if ev.kind == "bug"
                else f"Halfway through {key}; the {s['c']} part is done.",
                f"Pairing on {key} after lunch if anyone wants to join.",
            )
            return Root(message=chat_voice(rng, style, text), replies="chat", mentioned=[], event=ev, key=key)
        text = say(
            rng,
            style,
            "ask",
            q=one_of(rng, f"is anyone on {key}", f"what's the ETA for {key}", f"is {key} related to {s['ev']}"),
            why=one_of(rng, f"{s['cust']} is asking", f"a demo for {s['seg']}", "planning for next sprint"),
        )
        return Root(message=text, replies="answer", mentioned=[], event=ev, key=key)

    def _standup(self, at: datetime, author: int, recent: list[tuple[Any, str]]) -> Root:
        rng = self.rng
        mine = [self.by_key[k] for _, k in recent if self.by_key[k]["assignee_id"] == author]
        if not mine:
            mine = [self.by_key[rng.pick(recent)[1]]]
        a = mine[-1]
        b = mine[-2] if len(mine) > 1 else None
        blocker = one_of(rng, "none", "waiting on review", f"need input from {rng.pick(self.customers)}", "none so far")
        style = self.style(author)
        today = f"{b['key']} ({self.g.stories[b['id']].summary})" if b else one_of(rng, "reviews", "interviews", "docs")
        if style.register == "terse":
            text = f"y: {a['key']} / t: {today} / blockers: {blocker}"
        else:
            text = f"Yesterday: {a['key']} ({self.g.stories[a['id']].summary}). Today: {today}. Blockers: {blocker}."
        return Root(message=text, replies="chat", mentioned=[])

    def _incident(self, at: datetime, author: int, before: list[tuple[Any, str]]) -> Root:
        rng = self.rng
        hot = [
            k
            for _, k in before[-200:]
            if self.by_key[k]["type"] in ("incident", "bug") and self.by_key[k]["priority"] in ("critical", "high")
        ]
        if not hot:
            return self._question(author, [author])
        t = self.by_key[rng.pick(hot)]
        ev = self.g.stories[t["id"]]
        key, s = t["key"], ev.slots
        resolved = t["resolved_at"] is not None and t["resolved_at"] <= at
        if resolved:
            text = one_of(
                rng,
                f"Resolved: {key}. Root cause was that {ev.cause}; postmortem doc to follow.",
                f"{key} is fixed ({ev.fix}). Monitoring for another hour.",
                f"All clear on {key}. {cap(s['seg'])} should see normal behaviour again.",
            )
        else:
            text = one_of(
                rng,
                f"Investigating {key}: {ev.summary}. Started after {s['ev']}.",
                f"Update on {key}: impact limited to {s['seg']}, mitigation in progress.",
                f"Paging the owner of the {s['c']} for {key}.",
                f"{key}: rolled back the last change to the {s['c']}, watching error rates.",
            )
        return Root(
            message=chat_voice(rng, self.style(author), text), replies="incident", mentioned=[], event=ev, key=key
        )

    def _town_square(self, at: datetime, author: int) -> Root:
        rng = self.rng
        i = bisect.bisect_right(self.hire_days, at.date())
        if i and rng.chance(0.35):
            hire = self.emps[self.hires[rng.integers(max(0, i - 5), i)][1] - 1]
            team = self.g.rows["teams"][hire["team_id"] - 1]["name"] if hire["team_id"] else "the company"
            office = self.g.rows["locations"][hire["location_id"] - 1]["name"]
            where = "remote" if office == "Remote" else f"based in {office}"
            text = one_of(
                rng,
                f"Please welcome @{hire['username']}, who joins {team} as {hire['title']}!",
                f"Say hi to @{hire['username']} - new {hire['title']} in {team}, {where}.",
                f"Welcome aboard @{hire['username']}! {hire['first_name']} is our new {hire['title']}.",
            )
            return Root(message=text, replies="thanks", mentioned=[hire["id"]])
        if rng.chance(0.5):
            text = _fill(rng, rng.pick(NOTICES), city=rng.pick(self.cities))
            return Root(message=text, replies="thanks", mentioned=[])
        return self._question(author, [author])

    def _announcement(self, at: datetime, author: int) -> Root:
        rng = self.rng
        done = [
            t
            for t in self.tickets[-4000:]
            if t["resolved_at"] is not None and t["resolved_at"] <= at and t["status"] == "done"
        ]
        if not done:
            return Root(
                message=_fill(rng, rng.pick(NOTICES), city=rng.pick(self.cities)), replies="thanks", mentioned=[]
            )
        t = rng.pick(done)
        project = self.g.rows["projects"][t["project_id"] - 1]
        same = [x for x in done if x["project_id"] == t["project_id"] and x["id"] != t["id"]][-3:]
        n = self.releases[project["id"]] = self.releases.get(project["id"], 0) + 1
        items = "; ".join(f"{x['key']} {x['title'].lower()}" for x in [t, *same][:3])
        text = one_of(
            rng,
            f"{project['name']} release {n}: {items}.",
            f"Shipped this week in {project['name']}: {items}. Thanks to everyone involved!",
            f"Release notes for {project['name']} ({n}): {items}.",
        )
        return Root(message=text, replies="thanks", mentioned=[], key=t["key"])

    def reply(self, root: Root, replier: int, root_author: int) -> tuple[str, bool]:
        """A reply in ``root``'s thread; returns the text and whether it mentions the root's author."""
        rng = self.rng
        style = self.style(replier)
        ev = root.event
        if root.replies == "answer":
            if ev is not None and rng.chance(0.6):
                a = one_of(
                    rng,
                    f"{self.user(root_author)}, I'm on {root.key}, should be done this week",
                    f"{root.key} is waiting on review",
                    f"the cause of {root.key} is that {ev.cause}",
                )
                return say(rng, style, "answer", a=a, ref=root.key), False
            if root.question < 0 or root.slots is None:
                return say(rng, style, rng.pick(("agree", "thank"))), False
            a = str(rng.pick(QUESTIONS[root.question][2])).format(**root.slots)
            return say(
                rng, style, "answer", a=a, ref=one_of(rng, "the wiki", "the runbook", "last week's notes")
            ), False
        if root.replies == "review":
            if rng.chance(0.7):
                text = one_of(
                    rng,
                    f"Looking at {root.key} now.",
                    f"Approved {root.key}, one nit about naming.",
                    f"Left two comments on {root.key}, otherwise good.",
                )
                return chat_voice(rng, style, text), False
            return say(rng, style, "decline"), False
        if root.replies == "incident" and ev is not None:
            text = one_of(
                rng,
                f"Seeing the same on the {ev.component} dashboards.",
                f"Support has {rng.integers(3, 30)} tickets about it so far.",
                "I can take comms to customers.",
                f"Confirmed recovered on {ev.slots['env']}.",
            )
            return chat_voice(rng, style, text), False
        if root.replies == "thanks":
            if ev is not None and rng.chance(0.5):
                text = one_of(
                    rng,
                    f"Nice, {ev.slots['cust']} asked about the {ev.component} just last week.",
                    f"Great, that was the last thing blocking {ev.slots['feat']}.",
                    f"Thanks! Does that also cover the case when {ev.slots['trig']}?",
                    f"Finally :) I'll let {ev.slots['seg']} know.",
                )
                return chat_voice(rng, style, text), False
            if rng.chance(0.5):
                return say(rng, style, "thank"), False
            return chat_voice(rng, style, one_of(rng, "Welcome!", "Great work", "Nice one!", "Congrats team")), False
        if rng.chance(0.3):
            return f"@{self.user(root_author)} {say(rng, style, rng.pick(('agree', 'push_back')))}", True
        return say(rng, style, rng.pick(("agree", "agree", "thank", "push_back"))), False


def write_posts(g: Gen, channels: list[tuple[int, list[int], list[tuple[Any, str]], float]], rng: Any) -> None:
    """Root posts spread over channels by weight, their threads, mentions and reactions."""
    words = Dice(g.seeds.rng("history/chat-text"))
    writer = ChatWriter(g, words)
    names = {c["id"]: c["name"] for c in g.rows["channels"]}
    weights = [c[3] for c in channels]
    total = max(20, int(g.spec.employees * g.spec.history_days * 0.12))
    picks = rng.choice(len(channels), size=total, p=[w / sum(weights) for w in weights])
    roots: list[tuple[Any, int, int, Root]] = []
    for ci in sorted(int(c) for c in picks):
        cid, members, tickets, _ = channels[ci]
        author = int(members[int(rng.integers(len(members)))])
        raw = g.at(rng)
        author = g.stand_in(author, raw, members)  # a leaver drawn after their last day: a colleague posts
        at = g.placed(author, raw)
        root = writer.root(names[cid], at, author, members, tickets)
        roots.append((at, cid, author, root))
        g.add(
            "posts",
            {
                "channel_id": cid,
                "author_id": author,
                "root_id": None,
                "message": root.message,
                "created_at": at,
                "edited_at": None,
                "deleted_at": None,
                "is_pinned": False,
            },
        )
    members_of = {c[0]: c[1] for c in channels}
    for pid, (at, cid, author, root) in enumerate(roots, start=1):
        for m in sorted(set(root.mentioned)):
            g.add("mentions", {"post_id": pid, "employee_id": m})
        if rng.random() < 0.25 or (root.replies in ("answer", "review") and rng.random() < 0.5):
            when = at
            for _ in range(int(rng.integers(1, 4))):
                replier = int(members_of[cid][int(rng.integers(len(members_of[cid])))])
                later = g.when(replier, when + timedelta(minutes=int(rng.integers(1, 120))))
                if later is None:
                    break  # the replier's next working moment is after history ends: nobody answered yet
                when = later
                msg, mentions = writer.reply(root, replier, author)
                rid = g.add(
                    "posts",
                    {
                        "channel_id": cid,
                        "author_id": replier,
                        "root_id": pid,
                        "message": msg,
                        "created_at": when,
                        "edited_at": None,
                        "deleted_at": None,
                        "is_pinned": False,
                    },
                )
                if mentions:
                    g.add("mentions", {"post_id": rid, "employee_id": author})
        if rng.random() < 0.2:
            who = sorted(
                {int(members_of[cid][int(rng.integers(len(members_of[cid])))]) for _ in range(int(rng.integers(1, 3)))}
            )
            for w in who:
                g.add(
                    "reactions",
                    {
                        "post_id": pid,
                        "employee_id": w,
                        "emoji": str(words.pick(("thumbsup", "eyes", "white_check_mark", "tada", "pray", "rocket"))),
                        "created_at": min(g.start_at, at + timedelta(minutes=5)),
                    },
                )
