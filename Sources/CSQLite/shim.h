#include <sqlite3.h>

/// SQLITE_TRANSIENT is a cast macro that Swift cannot import; this returns it.
static inline sqlite3_destructor_type tourbus_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}

/// Keeps a connection from checkpointing when it closes (sqlite3_db_config is variadic, which
/// Swift cannot call): a replicated database checkpoints only where the replicas agree to.
static inline int tourbus_sqlite_no_checkpoint_on_close(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
}
