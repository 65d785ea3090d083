"""Answers of many ranks: equal ones once, with their ranks; different ones side by side."""

from __future__ import annotations

from pkdb.mpi.aggregate import Group, group_answers, render


def test_equal_answers_are_one_group() -> None:
    groups = group_answers({3: "4\n", 0: "4\n", 2: "4\n", 1: "4\n"})
    assert groups == [Group((0, 1, 2, 3), "4\n")]
    assert render(groups) == "[ranks 0-3] 4\n"


def test_groups_ordered_by_lowest_rank_and_empty_answers_left_out() -> None:
    groups = group_answers({0: "b\n", 1: "a\n", 2: "b\n", 3: ""})
    assert groups == [Group((0, 2), "b\n"), Group((1,), "a\n")]


def test_different_answers_side_by_side() -> None:
    text = render(group_answers({1: "array([7., 8., 9.])\n", 2: "array([15., 16., 17.])\n"}))
    assert text == (
        "[rank 1]            | [rank 2]\narray([7., 8., 9.]) | array([15., 16., 17.])\n"
    )


def test_multiline_answers_side_by_side_pad_the_shorter() -> None:
    text = render(group_answers({0: "a\nb\nc\n", 1: "x\n"}))
    assert text.splitlines() == ["[rank 0] | [rank 1]", "a        | x", "b", "c"]


def test_too_wide_answers_stack() -> None:
    wide = "x" * 60
    text = render(group_answers({0: wide + "\n", 1: "y\n"}), width=40)
    assert text == f"[rank 0] {wide}\n[rank 1] y\n"


def test_many_different_answers_stack() -> None:
    answers = {rank: f"{rank}\n" for rank in range(6)}
    text = render(group_answers(answers))
    assert text.splitlines() == [f"[rank {rank}] {rank}" for rank in range(6)]


def test_multiline_group_under_its_label() -> None:
    text = render(group_answers({0: "> f.py(3)g()\n-> x = 1\n", 1: "> f.py(3)g()\n-> x = 1\n"}))
    assert text == "[ranks 0,1]\n> f.py(3)g()\n-> x = 1\n"


def test_nothing_to_show() -> None:
    assert render(group_answers({0: "", 1: ""})) == ""
