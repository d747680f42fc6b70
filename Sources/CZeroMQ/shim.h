#include <zmq.h>
/* eventfd wakes a socket thread from zmq_poll when another thread hands it work. */
#include <sys/eventfd.h>
