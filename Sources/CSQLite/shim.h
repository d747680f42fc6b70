#include <sqlite3.h>

/// SQLITE_TRANSIENT is a cast macro that Swift cannot import; this returns it.
static inline sqlite3_destructor_type tourbus_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}
