/* What the tests read of a session beyond the public API (ted/ted.h): the
 * position and source length of one row of the batch, and the room its
 * buffers have. */
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

#endif
