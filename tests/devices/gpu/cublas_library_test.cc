// cuBLAS is opened on first use, not at load time: a process that makes no GPU device never
// maps it (and never pays its ~150 MiB of resident memory). Runs without a GPU: loading the
// library needs the toolkit, not a driver.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "devices/gpu/cublas_library.h"
#include "runtime/session.h"

namespace tessera {
namespace {

bool CublasIsMapped() {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return text.str().find("libcublas") != std::string::npos;
}

TEST(CublasLibraryTest, LoadedOnFirstUseOnly) {
  // A CPU session (no GPU device even where there is a GPU): the library does not come with it.
  SessionConfig config;
  config.device_count = {{"GPU", 0}};
  auto session = Session::Create(config, GraphSpec());
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_FALSE(CublasIsMapped());

  StatusOr<const CublasLibrary*> cublas = LoadCublas();
  ASSERT_TRUE(cublas.ok()) << cublas.status();
  EXPECT_TRUE(CublasIsMapped());
  EXPECT_STREQ((*cublas)->status_name(CUBLAS_STATUS_NOT_INITIALIZED), "CUBLAS_STATUS_NOT_INITIALIZED");
  StatusOr<const CublasLibrary*> again = LoadCublas();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *cublas);
}

}  // namespace
}  // namespace tessera
