"""Waiting out a restart of the database: ``retry_transient`` runs a step
that is safe to run twice again, with backoff, while it raises an error
that means "not now" rather than "no".  The conductor's workflows run
their steps through it (``conductor/tasks/base.py`` says which), and so
does the API's local delete of a server on no up host
(``volattach.volume_release``)."""
import logging
import time

import tenacity

from volattach import exception

LOG = logging.getLogger(__name__)

# How long one step waits out a database outage (a restart), trying again
# with backoff, before the workflow gives up.
TRANSIENT_RETRY_SECONDS = 30.0
TRANSIENT_WAIT_START = 0.1
TRANSIENT_WAIT_MAX = 2.0
# "Not now" rather than "no": no database connection could be had (or it
# was lost: the server rolled back, or, rarely, the outcome of a COMMIT is
# unknown, which an idempotent step does not mind).  Not the volume
# service's CinderConnectionFailed: its client has tried again already.
TRANSIENT_ERRORS = (exception.DatabaseUnavailable,)


def _log_retry(fn, error):
    LOG.warning("%s failed (%s); trying again",
                getattr(fn, "__qualname__", fn), error)


def retry_transient(fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, run again (exponential backoff) while it
    raises one of ``TRANSIENT_ERRORS``, for up to
    ``TRANSIENT_RETRY_SECONDS``; then that error is raised.  Only for a
    step that is safe to run twice.  The first try runs without tenacity
    (a workflow runs about 14 such steps per attach and detach; building
    a ``Retrying`` for each cost about 3 % of its CPU)."""
    try:
        return fn(*args, **kwargs)
    except TRANSIENT_ERRORS as error:
        if TRANSIENT_RETRY_SECONDS <= 0:
            raise
        _log_retry(fn, error)
        time.sleep(TRANSIENT_WAIT_START)
    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(TRANSIENT_ERRORS),
        stop=tenacity.stop_after_delay(TRANSIENT_RETRY_SECONDS),
        wait=tenacity.wait_exponential(multiplier=TRANSIENT_WAIT_START,
                                       max=TRANSIENT_WAIT_MAX),
        before_sleep=lambda state: _log_retry(fn, state.outcome.exception()),
        reraise=True)
    return retrying(fn, *args, **kwargs)
