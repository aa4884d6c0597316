// Mutual TLS for a cluster: tasks and clients that present certificates signed by the CA
// talk; a plaintext client is turned away; bad certificate files are clear errors. Its own
// test program, as TLS is a process-wide choice.
#include "distributed/tls.h"

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <fstream>

#include "distributed/cluster_server.h"
#include "distributed/grpc_session.h"
#include "distributed/protos/worker_service.grpc.pb.h"
#include "distributed/worker_channels.h"
#include "graph/builder/ops.h"
#include "runtime/session.h"
#include "tests/distributed/free_port.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::FreePort;
using testing::LoopbackAddress;

const std::string kDir = TESSERA_SOURCE_DIR "/tests/distributed/tls/";

TEST(TlsTest, BadFilesAreClearErrors) {
  Status s = UseTls({.cert_file = kDir + "task.pem", .key_file = kDir + "missing.key", .ca_file = kDir + "ca.pem"});
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("missing.key"));
  const std::string not_pem = ::testing::TempDir() + "/not_pem.txt";
  std::ofstream(not_pem) << "hello\n";
  s = UseTls({.cert_file = not_pem, .key_file = kDir + "task.key", .ca_file = kDir + "ca.pem"});
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("is not PEM"));
  s = UseTls({.cert_file = kDir + "task.pem"});
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("--tls-key"));
  EXPECT_FALSE(TlsInUse()) << "a failed UseTls changes nothing";
}

TEST(TlsTest, TasksAndClientsWithCertificatesTalkAndPlaintextIsTurnedAway) {
  ASSERT_TRUE(UseTls({.cert_file = kDir + "task.pem", .key_file = kDir + "task.key", .ca_file = kDir + "ca.pem"}).ok());
  RegisterGrpcSessionFactory();
  auto cluster = ClusterSpec::FromJson(StrCat(R"({"ps": [")", LoopbackAddress(FreePort()), R"("], "worker": [")",
                                              LoopbackAddress(FreePort()), R"("]})"));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto ps = ClusterServer::Create(*cluster, "ps", 0, {});
  ASSERT_TRUE(ps.ok()) << ps.status();
  auto worker = ClusterServer::Create(*cluster, "worker", 0, {});
  ASSERT_TRUE(worker.ok()) << worker.status();

  // A step over both tasks: the client, the master and the ps all speak TLS.
  Scope root = Scope::NewRootScope();
  auto w = ops::Variable(root.WithOpName("w").WithDevice("/job:ps/task:0"), TensorShape({}), DataType::kFloat);
  ops::Assign(root.WithOpName("init").WithDevice("/job:ps/task:0"), w, Tensor::Scalar<float>(3));
  ops::Mul(root.WithOpName("y").WithDevice("/job:worker/task:0"), w, 2.0f);
  GraphSpec def;
  ASSERT_TRUE(root.ToSpec(&def).ok());
  auto session = Session::Create((*worker)->target(), SessionConfig(), def);
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run({}, {}, {"init"}, &out).ok());
  Status s = (*session)->Run({}, {"y"}, {}, &out);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(out.at(0).data<float>()[0], 6.0f);
  // Nothing between the tasks bypasses TLS: no direct transport is served or used.
  EXPECT_EQ(DirectClient::Connect(*cluster->TaskAddress("ps", 0), "ps", "").status().code(), Code::kNotFound);
  EXPECT_EQ(WorkerChannels(*cluster, "").Direct("ps", 0), nullptr);

  auto plaintext = rpc::WorkerService::NewStub(
      grpc::CreateChannel((*worker)->target().substr(7), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  rpc::GetStatusRequest request;
  rpc::GetStatusResponse response;
  auto call = plaintext->GetStatus(&context, &response);
  (void)call->Write(request, grpc::WriteOptions().set_last_message());
  grpc::Status refused = call->Finish();
  EXPECT_FALSE(refused.ok());
}

}  // namespace
}  // namespace tessera
