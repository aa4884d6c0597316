// The address table of a launch that tells each task only its rank (mpirun, a PMI launcher):
// every rank reports to rank 0, at the address the command line names, where it will serve;
// rank 0 answers each with the whole table, in rank order.
//
//   // rank 2 of 3, serving on port 8890 of whatever address reaches rank 0
//   ASSIGN_OR_RETURN(std::vector<std::string> table,
//                    ExchangeRankAddresses(2, 3, "n1:7777", 8890, absl_like_deadline));
//   // table[r] is "host:port" of rank r
//
// Plain TCP, a line a message. Rank 0 listens on the coordinator's port (serving on its own
// port, which must differ); its own host is the coordinator's. Another rank's host is the
// local address of its connection to rank 0: the one rank 0 reaches it by (the coordinator's
// host where that address is a loopback one: a rank on rank 0's machine). Every wait ends at
// the timeout, with DeadlineExceeded naming the ranks that did not report; a peer sending
// what is not a report (too long, malformed, a rank out of range or taken, an address taken)
// is dropped with the reason written back, and rank 0 goes on waiting for the real one.
// There is no authentication: the launch's own network is trusted, as mpirun's is. Each call
// is independent: calls may run concurrently (a test's ranks on threads).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "graph/platform/status.h"

namespace tessera {

StatusOr<std::vector<std::string>> ExchangeRankAddresses(int rank, int size, const std::string& coordinator, int port,
                                                         std::chrono::milliseconds timeout);

}  // namespace tessera
