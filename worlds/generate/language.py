"""How people write: a per-employee style drawn from the seed, phrase banks per intent, and composition.

Every text the generator writes is ``greeting? + context + body + closing? + sign-off?``, each part chosen
from a bank for the writer's *register* (terse, chatty or formal) and the *intent* of the message (ask,
answer, report a bug, push back, escalate, agree, decline, summarise, thank, status update...). The body is
built by the event that caused the message (a ticket, a release, a hire), so the words change with what
happened and the shape changes with who wrote it: a terse engineer writes "PAY-12 is in review", a chatty
one "Quick heads up, PAY-12 is finally in review :)", a formal one "PAY-12 is now ready for review."

Styles are not stored: they are drawn from the ``style`` stream in employee order, so the same seed gives
every employee the same voice in every stage (and in any later stage that wants to write as them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from worlds.generate.common import Gen

REGISTERS = ("terse", "chatty", "formal")
_SENTENCE = re.compile(r"([.!?] )([a-z])")


class Dice:
    """Fast draws from one named stream: floats taken from numpy in blocks, so a pick costs a list index.

    Text generation makes tens of picks per artifact; numpy's scalar calls cost ~2 us each, a block draw ~5 ns
    per value. The sequence is still a pure function of the stream's seed.
    """

    def __init__(self, rng: np.random.Generator, block: int = 4096) -> None:
        self._rng = rng
        self._block = block
        self._buf: list[float] = []
        self._i = 0

    def random(self) -> float:
        """A float in [0, 1)."""
        if self._i >= len(self._buf):
            self._buf = self._rng.random(self._block).tolist()
            self._i = 0
        self._i += 1
        return self._buf[self._i - 1]

    def integers(self, lo: int, hi: int | None = None) -> int:
        """An int in [lo, hi) (or [0, lo) with one argument), as numpy's ``integers``."""
        if hi is None:
            lo, hi = 0, lo
        return lo + int(self.random() * (hi - lo))

    def pick(self, items: Any) -> Any:
        """One item of a sequence."""
        return items[int(self.random() * len(items))]

    def chance(self, p: float) -> bool:
        """True with probability ``p``."""
        return self.random() < p


@dataclass(frozen=True, kw_only=True)
class Style:
    """How one employee writes."""

    register: str
    greets: bool
    signs: bool
    emoji: bool
    lowercase: bool


def styles_for(g: Gen) -> list[Style]:
    """One style per employee, in employee order (index = employee id - 1)."""
    rng = g.seeds.rng("style")
    out: list[Style] = []
    for _ in g.rows["employees"]:
        register = str(rng.choice(REGISTERS, p=[0.35, 0.4, 0.25]))
        out.append(
            Style(
                register=register,
                greets=bool(rng.random() < {"terse": 0.2, "chatty": 0.8, "formal": 0.95}[register]),
                signs=bool(rng.random() < {"terse": 0.3, "chatty": 0.6, "formal": 0.95}[register]),
                emoji=register == "chatty" and bool(rng.random() < 0.5),
                lowercase=register == "terse" and bool(rng.random() < 0.3),
            )
        )
    return out


# Intents: what a message is for. Each bank maps a register to templates; slots are filled by the caller.
INTENTS: dict[str, dict[str, tuple[str, ...]]] = {
    "ask": {
        "terse": ("{q}?", "q: {q}?", "{q}? need it for {why}", "anyone know {q}?"),
        "chatty": (
            "Quick question: {q}? Asking because of {why}.",
            "Does anyone know {q}? I'm stuck on {why}",
            "Hey folks, {q}? Trying to sort out {why}.",
            "Random one: {q}? Context is {why}.",
        ),
        "formal": (
            "Could someone confirm {q}? This is needed for {why}.",
            "I would like to check {q}, as it affects {why}.",
            "Can anyone advise {q}? It blocks {why}.",
        ),
    },
    "answer": {
        "terse": ("{a}.", "{a}, see {ref}.", "afaik {a}.", "{a} (checked {ref})."),
        "chatty": (
            "I think {a} - at least that's what I saw in {ref}.",
            "Pretty sure {a}. {ref} has the details.",
            "Good question! {a}, we hit the same thing in {ref}.",
        ),
        "formal": (
            "As far as I know, {a}. The details are in {ref}.",
            "To answer your question: {a}. See {ref} for the background.",
            "{A}; {ref} documents this.",
        ),
    },
    "agree": {
        "terse": ("+1", "agreed", "makes sense", "ok, go ahead", "sgtm", "fine by me"),
        "chatty": (
            "Yes, let's do that!",
            "Totally agree, that's the simpler route.",
            "Works for me, thanks for pushing on this.",
            "Love it, go for it",
        ),
        "formal": (
            "Agreed, please go ahead.",
            "That works for me.",
            "I support this approach.",
            "Thank you, this is the right call.",
        ),
    },
    "push_back": {
        "terse": (
            "not sure, {concern}",
            "disagree - {concern}",
            "hold on, {concern}",
            "-1 for now, {concern}",
        ),
        "chatty": (
            "Hmm, I'm not convinced yet - {concern}.",
            "I see the point but {concern}. Can we talk before we commit?",
            "Before we go ahead: {concern}. Worth a quick sync?",
        ),
        "formal": (
            "I have a concern: {concern}. Could we review this first?",
            "I would prefer to wait, as {concern}.",
            "Before we proceed, please note that {concern}.",
        ),
    },
    "thank": {
        "terse": ("thanks", "thx!", "ty", "thanks, that helped"),
        "chatty": (
            "Thanks so much, that saved me an afternoon!",
            "Amazing, thank you!",
            "You're a star, thanks",
            "Thanks! Owe you a coffee",
        ),
        "formal": (
            "Thank you for your help.",
            "Many thanks.",
            "Thank you, much appreciated.",
            "Thanks for the quick reply.",
        ),
    },
    "decline": {
        "terse": ("can't this week, {reason}", "no capacity - {reason}", "not me, {reason}"),
        "chatty": (
            "I'd love to but {reason}, sorry!",
            "Can't take it on right now, {reason}. Maybe next sprint?",
        ),
        "formal": (
            "Unfortunately I cannot take this on, as {reason}.",
            "I need to decline for now: {reason}.",
        ),
    },
}
CONCERNS = (
    "we have no rollback plan",
    "this touches the billing path right before month-end",
    "QA has not signed off",
    "the numbers don't add up yet",
    "it doubles the on-call load",
    "legal has not reviewed the wording",
    "the customer has not confirmed the scope",
    "we promised this sprint to the migration",
    "nobody owns the old service after that",
    "the estimate looks low to me",
)
DECLINE_REASONS = (
    "I'm on call",
    "I'm out Thursday and Friday",
    "the release eats my week",
    "I'm buried in interviews",
    "I'm already on two reviews",
    "my plate is full with the migration",
)
GREETINGS = {
    "terse": ("{n},", "Hi {n},"),
    "chatty": ("Hi {n}!", "Hey {n},", "Hi {n}, hope your week is going well.", "Morning {n}!"),
    "formal": ("Dear {n},", "Hello {n},", "Good morning {n},", "Hi {n},"),
}
CLOSINGS = {
    "terse": ("", "Thanks.", "Let me know."),
    "chatty": (
        "Let me know what you think!",
        "Shout if anything is unclear.",
        "Happy to jump on a call if easier.",
        "Thanks a ton!",
    ),
    "formal": (
        "Please let me know if you need anything further.",
        "I look forward to your reply.",
        "Thank you in advance.",
        "Do not hesitate to reach out with questions.",
    ),
}
SIGN_OFFS = {
    "terse": ("{n}", "- {n}"),
    "chatty": ("Cheers,\n{n}", "Thanks!\n{n}", "Best,\n{n}"),
    "formal": ("Best regards,\n{n}", "Kind regards,\n{n}", "Regards,\n{n}", "Sincerely,\n{n}"),
}
EMOJI_TAILS = (" :)", " :tada:", " :rocket:", " :sweat_smile:", " :eyes:", " :pray:")


def say(rng: Dice, style: Style, intent: str, **slots: Any) -> str:
    """One sentence of an intent in the writer's register."""
    text = str(rng.pick(INTENTS[intent][style.register]))
    if "{A}" in text and "a" in slots:
        slots["A"] = str(slots["a"])[:1].upper() + str(slots["a"])[1:]
    if "concern" not in slots:
        slots["concern"] = rng.pick(CONCERNS)
    if "reason" not in slots:
        slots["reason"] = rng.pick(DECLINE_REASONS)
    return chat_voice(rng, style, _SENTENCE.sub(lambda m: m.group(1) + m.group(2).upper(), text.format(**slots)))


def chat_voice(rng: Dice, style: Style, text: str) -> str:
    """A chat line as the writer types it: a terse writer may drop capitals, a chatty one adds an emoji."""
    if style.lowercase and text[:1].isupper() and not text[1:2].isupper():
        text = text[:1].lower() + text[1:]
    if style.emoji and rng.random() < 0.35:
        text = text.rstrip(".") + str(rng.pick(EMOJI_TAILS))
    return text


def letter(rng: Dice, style: Style, to_first: str, from_name: str, paragraphs: list[str], closing: bool = True) -> str:
    """A mail body: greeting? + paragraphs + closing? + sign-off?, shaped by the writer's style."""
    parts: list[str] = []
    if style.greets:
        parts.append(str(rng.pick(GREETINGS[style.register])).format(n=to_first))
    parts.extend(p for p in paragraphs if p)
    if closing:
        end = str(rng.pick(CLOSINGS[style.register]))
        if end:
            parts.append(end)
    if style.signs:
        first = from_name.split()[0] if style.register != "formal" else from_name
        parts.append(str(rng.pick(SIGN_OFFS[style.register])).format(n=first))
    return "\n\n".join(parts)


def cap(text: str) -> str:
    """First letter upper-cased (the rest untouched)."""
    return text[:1].upper() + text[1:]


def one_of(rng: Dice, *options: str) -> str:
    """One of a few phrasings."""
    return str(options[int(rng.integers(len(options)))])
