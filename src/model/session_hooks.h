/* What the tests read of a session beyond the public API (ted/ted.h): the
 * position and source length of one row of the batch. */
#ifndef TED_MODEL_SESSION_HOOKS_H
#define TED_MODEL_SESSION_HOOKS_H

#include "ted/ted.h"

/* Number of tokens fed by step() to one row since it was encoded or joined
 * (0 when the row is out of range). */
int ted_session_row_position(const ted_session *session, int row);

/* Source length of a row of the batch (its own, not the padded length; 0
 * when the row is out of range). */
int ted_session_source_length(const ted_session *session, int row);

#endif
