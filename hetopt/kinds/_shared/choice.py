"""Automatic method choices that say what they chose and why.

When a parameter is ``"auto"`` (``client_selection`` ``method``, ``human_robot``
``method``, ``multicore`` ``formulation``) the kind picks a method from the instance.
Every such choice is reported in ``Result.info["method_choice"]`` (one line: what ran,
why, and the parameter that chooses otherwise) and logged once on the kind's logger when
the method runs (:func:`hetopt.pipeline.announce_choice`): at ``WARNING`` when the choice
falls back from a faster exact path or to a method without an optimality proof, at
``INFO`` otherwise. The command line shows warnings on stderr
(``hetopt: warning: ...``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ...contract import Detail, Outcome

__all__ = ["CHOICE_DETAIL", "Choice", "ReportsChoice", "chosen"]

CHOICE_DETAIL = Detail(
    "method_choice",
    "str",
    "what an 'auto' parameter chose, why, and how to choose otherwise",
)


@dataclass(frozen=True)
class Choice:
    """The outcome of an automatic choice: ``text`` for ``info``, ``fallback`` when it is
    slower than the fast exact path or gives up the optimality proof."""

    text: str
    fallback: bool = False


class ReportsChoice:
    """Mixin of a method an automatic choice can pick: :attr:`choice` (set on the
    method object the choice returns) goes into ``info["method_choice"]``."""

    choice: Choice | None = None

    def report_choice(self, outcome: Outcome) -> Outcome:
        if self.choice is not None:
            outcome.details["method_choice"] = self.choice.text
        return outcome

    def choice_details(self) -> dict[str, Any]:
        return {} if self.choice is None else {"method_choice": self.choice.text}


def chosen(method: Any, choice: Choice) -> Any:
    """``method`` (a :class:`ReportsChoice`) marked as picked by ``choice``: a copy for a
    frozen dataclass (a shared method table's entry), else the object itself (made for
    this solve). The choice is logged once, by :func:`hetopt.pipeline.solve` when the
    method runs (``Kind.check`` asks ``method_for`` too, for ``validate``)."""
    if dataclasses.is_dataclass(method):
        return dataclasses.replace(method, choice=choice)  # type: ignore[type-var]
    method.choice = choice
    return method
