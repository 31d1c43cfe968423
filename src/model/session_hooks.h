/* What the tests read of a session beyond the public API (ted/ted.h): the
 * position and source length of one row of the batch, and the room its
 * buffers have; and what ted serve asks of it: to keep its memory while
 * it is busy, to give it all back when it is idle, and to encode on threads
 * of their own beside the batch's steps. */
#ifndef TED_MODEL_SESSION_HOOKS_H
#define TED_MODEL_SESSION_HOOKS_H

#include "ted/ted.h"

/* Number of tokens fed by step() to one row since it was encoded or joined
 * (0 when the row is out of range). */
int ted_session_row_position(const ted_session *session, int row);

/* Source length of a row of the batch (its own, not the padded length; 0
 * when the row is out of range). */
int ted_session_source_length(const ted_session *session, int row);

/* The rows the buffers hold, and the source positions and steps of each
 * row they are laid out for. */
void ted_session_room(const ted_session *session, int *rows, int *source_len, int *max_steps);

/* From now on the calling thread's sessions compute on a second pool of
 * `threads` threads (at most the CPUs this process may use), beside the
 * pool of ted_set_threads(): ted serve's encoding thread, on the CPUs that
 * the batching thread's pool leaves. */
void ted_session_compute_beside(int threads);

#endif
