// Jobs started as users start them on clusters: `srun -n 3` on a one-node Slurm the test
// starts and stops (tests/tools/one_node_slurm.sh), and `mpirun -np 3`, whose ranks find each
// other through the mpi resolver (each reports its address to rank 0), of multi-worker
// training give the variables one process gives with the same global batch. Skipped, saying
// why, where a launcher is not installed (scripts/setup.sh installs them) or, for Slurm's
// daemons, where the test is not root.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "tests/distributed/free_port.h"
#include "tests/tools/multi_worker_check.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::ExpectCheckpointEquals;
using testing::kTrainFlags;
using testing::OneProcess;
using testing::RunCommand;

bool OnPath(const std::string& program) {
  std::istringstream path(std::getenv("PATH") != nullptr ? std::getenv("PATH") : "");
  for (std::string dir; std::getline(path, dir, ':');) {
    if (access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

// A port whose next `count - 1` are free too: the ranks of one host serve at a base plus
// their local rank.
int FreePortRun(int count) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int base = testing::FreePort();
    bool free = true;
    for (int i = 1; i < count && free; ++i) free = testing::BindLoopback(base + i) == base + i;
    if (free) return base;
  }
  return 0;
}

TEST(LauncherTest, MpirunThreeWorkersEqualOneProcess) {
  if (!OnPath("mpirun")) GTEST_SKIP() << "mpirun is not installed (scripts/setup.sh installs Debian's openmpi-bin)";
  const int base = FreePortRun(3), coordinator = testing::FreePort();
  const std::string prefix = StrCat(::testing::TempDir(), "/launcher_mpirun_", getpid(), ".ckpt");
  // As root (CI), Open MPI wants to be told; the ranks oversubscribe this machine's cores.
  const auto [out, status] =
      RunCommand(StrCat("timeout 300 mpirun --allow-run-as-root --oversubscribe -np 3 ", TESSERA_CLI, kTrainFlags,
                        " --resolver mpi --coordinator 127.0.0.1:", coordinator, " --port-base ", base,
                        " --checkpoint ", prefix));
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr(StrCat("worker 0 of 3 serves grpc://127.0.0.1:", base)));
  EXPECT_THAT(out, HasSubstr("the chief is done"));
  ExpectCheckpointEquals(prefix, OneProcess());
}

TEST(LauncherTest, SrunThreeWorkersEqualOneProcess) {
  for (const char* program : {"munged", "slurmctld", "slurmd", "srun"}) {
    if (!OnPath(program)) GTEST_SKIP() << program << " is not installed (scripts/setup.sh installs slurm-wlm, munge)";
  }
  if (geteuid() != 0) GTEST_SKIP() << "Slurm's daemons run as root here, and the test is not root";
  const std::string script = TESSERA_SOURCE_DIR "/tests/tools/one_node_slurm.sh";
  const std::string dir = StrCat(::testing::TempDir(), "/launcher_slurm_", getpid());
  struct Stop {
    std::string command;
    ~Stop() { RunCommand(command); }
  } stop{StrCat(script, " stop ", dir)};
  auto [conf, started] =
      RunCommand(StrCat(script, " start ", dir, " ", testing::FreePort(), " ", testing::FreePort()));
  ASSERT_EQ(started, 0) << conf;
  conf.erase(conf.find_last_not_of('\n') + 1);
  const int base = FreePortRun(3);
  const std::string prefix = StrCat(::testing::TempDir(), "/launcher_srun_", getpid(), ".ckpt");
  const auto [out, status] = RunCommand(StrCat("SLURM_CONF=", conf, " timeout 300 srun -n 3 --overcommit ",
                                               TESSERA_CLI, kTrainFlags, " --resolver slurm --port-base ", base,
                                               " --checkpoint ", prefix));
  ASSERT_EQ(status, 0) << out;
  EXPECT_THAT(out, HasSubstr(StrCat("worker 0 of 3 serves grpc://localhost:", base)));
  ExpectCheckpointEquals(prefix, OneProcess());
}

}  // namespace
}  // namespace tessera
