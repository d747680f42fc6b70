#include <uv.h>
#include <raft.h>
#include <raft/uv.h>
#include <dqlite.h>
