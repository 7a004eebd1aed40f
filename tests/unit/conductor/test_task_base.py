"""tasks.base.TaskBase: a task records the steps it completed, and its
rollback undoes exactly those, newest first; an undo that fails is logged
and the others still run; a step whose outcome an error leaves unknown is
undone too, one that was refused is not."""
import logging
import types

import pytest

import volattach  # noqa: F401
from volattach.conductor.tasks import base


class Boom(Exception):
    pass


class Unanswered(Exception):
    pass


class Recorder(base.TaskBase):
    """A task whose steps are given as (name, fail) pairs; each completed
    step records the undo that appends its name to ``undone``."""

    def __init__(self, steps, failing_undos=(), unknown_step=None):
        super().__init__(None, types.SimpleNamespace(uuid="inst-1"),
                         compute_rpcapi=None, volume_api=None,
                         connectors=None)
        self.steps = steps
        self.failing_undos = failing_undos
        self.unknown_step = unknown_step
        self.done, self.undone, self.rolled_back = [], [], []
        self.succeeded = False

    def _undo_step(self, name):
        if name in self.failing_undos:
            self.undone.append("failed " + name)
            raise Boom("undo of %s" % name)
        self.undone.append(name)

    def _execute(self):
        for name, error in self.steps:
            if name == self.unknown_step:
                with self._attempt("undo " + name, self._undo_step, name,
                                   unknown=Unanswered):
                    if error:
                        raise error
            else:
                if error:
                    raise error
                self._did("undo " + name, self._undo_step, name)
            self.done.append(name)
        return "result"

    def _on_success(self):
        self.succeeded = True

    def rollback(self, error):
        super().rollback(error)
        self.rolled_back.append(error)


def test_a_task_that_completes_undoes_nothing():
    task = Recorder([("a", None), ("b", None)])
    assert task.execute() == "result"
    assert task.undone == [] and task.rolled_back == []
    assert task.succeeded


def test_only_the_completed_steps_are_undone_in_reverse():
    error = Boom("c failed")
    task = Recorder([("a", None), ("b", None), ("c", error), ("d", None)])
    with pytest.raises(Boom) as raised:
        task.execute()
    assert raised.value is error
    assert task.done == ["a", "b"]
    assert task.undone == ["b", "a"]
    assert task.rolled_back == [error]
    assert not task.succeeded


def test_an_undo_that_fails_is_logged_and_the_others_still_run(caplog):
    error = Boom("d failed")
    task = Recorder([("a", None), ("b", None), ("c", None), ("d", error)],
                    failing_undos=("b",))
    with caplog.at_level(logging.ERROR, logger=base.__name__):
        with pytest.raises(Boom) as raised:
            task.execute()
    assert raised.value is error            # the workflow's error, not the undo's
    assert task.undone == ["c", "failed b", "a"]
    [record] = [r for r in caplog.records if "could not undo b" in r.getMessage()]
    assert record.exc_info is not None and "inst-1" in record.getMessage()


def test_a_step_whose_outcome_is_unknown_is_undone():
    error = Unanswered("no answer")
    task = Recorder([("a", None), ("b", error)], unknown_step="b")
    with pytest.raises(Unanswered):
        task.execute()
    assert task.undone == ["b", "a"]


def test_a_step_that_was_refused_is_not_undone():
    error = Boom("refused")
    task = Recorder([("a", None), ("b", error)], unknown_step="b")
    with pytest.raises(Boom):
        task.execute()
    assert task.undone == ["a"]


def test_an_attempted_step_that_completes_is_undone_by_its_refined_undo():
    class Refining(Recorder):
        def _execute(self):
            self._did("undo a", self._undo_step, "a")
            with self._attempt("undo b, maybe", self._undo_step,
                               "b-maybe") as step:
                step.undo_by("undo b", self._undo_step, "b-known")
            raise Boom("after b")

    task = Refining([])
    with pytest.raises(Boom):
        task.execute()
    assert task.undone == ["b-known", "a"]


def test_committed_steps_are_not_undone():
    class Committing(Recorder):
        def _execute(self):
            self._did("undo a", self._undo_step, "a")
            self._commit_steps()
            self._did("undo b", self._undo_step, "b")
            raise Boom("after b")

    task = Committing([])
    with pytest.raises(Boom):
        task.execute()
    assert task.undone == ["b"]


def test_a_failure_once_done_rolls_nothing_back():
    """``_on_success`` runs outside the rollback's reach: a workflow that
    is done is not undone because recording its success failed."""
    class FailingReport(Recorder):
        def _on_success(self):
            raise Boom("event")

    task = FailingReport([("a", None)])
    with pytest.raises(Boom):
        task.execute()
    assert task.undone == [] and task.rolled_back == []
