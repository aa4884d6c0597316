#include "distributed/cluster_server.h"

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <mutex>

#include "distributed/protos/worker_service.grpc.pb.h"
#include "distributed/rpc_util.h"
#include "distributed/worker_channels.h"
#include "graph/platform/logging.h"
#include "graph/serialize/tensor_codec.h"

namespace tessera {
namespace {

// Whether a and b are equal, in time that depends on their lengths only.
bool SameToken(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    diff |= static_cast<unsigned char>((i < a.size() ? a[i] : 0) ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

bool IsLoopback(std::string_view address) {
  const std::string_view host = address.substr(0, address.rfind(':'));
  return host == "localhost" || host == "[::1]" || host.starts_with("127.");
}

class WorkerService final : public rpc::WorkerService::Service {
 public:
  WorkerService(std::string task_name, std::shared_ptr<Server> local, std::string token)
      : task_name_(std::move(task_name)), local_(std::move(local)), token_(std::move(token)) {}

  grpc::Status GetStatus(grpc::ServerContext* context, const rpc::GetStatusRequest*,
                         rpc::GetStatusResponse* response) override {
    if (Status s = Authenticate(*context, "GetStatus"); !s.ok()) return ToGrpc(s);
    response->set_task(task_name_);
    for (const Device* d : local_->devices()->devices()) {
      rpc::DeviceAttributes* a = response->add_devices();
      a->set_name(d->name());
      a->set_device_type(d->device_type());
      a->set_memory_limit(d->attributes().memory_limit);
      a->set_physical_device_desc(d->attributes().physical_device_desc);
      a->set_incarnation(d->incarnation());
    }
    return grpc::Status::OK;
  }

  // Waits for the step's tensor in this task's rendezvous; the caller's deadline or
  // cancellation ends the wait (the rendezvous keeps its callback, which then finds no one).
  grpc::Status RecvTensor(grpc::ServerContext* context, const rpc::RecvTensorRequest* request,
                          rpc::RecvTensorResponse* response) override {
    if (Status s = Authenticate(*context, "RecvTensor"); !s.ok()) return ToGrpc(s);
    struct Wait {
      std::mutex mu;
      std::condition_variable cv;
      bool done = false;
      Status status;
      Tensor value;
    };
    auto wait = std::make_shared<Wait>();
    local_->rendezvous()->Find(request->step_id())->RecvAsync(
        request->rendezvous_key(), [wait](const Status& s, const Tensor& t) {
          std::lock_guard<std::mutex> lock(wait->mu);
          wait->status = s;
          wait->value = t;
          wait->done = true;
          wait->cv.notify_all();
        });
    std::unique_lock<std::mutex> lock(wait->mu);
    while (!wait->cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return wait->done; })) {
      if (context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "the receiver gave up");
    }
    if (!wait->status.ok()) return ToGrpc(wait->status);
    StatusOr<std::string> bytes = EncodeTensor(wait->value);
    if (!bytes.ok()) return ToGrpc(bytes.status());
    response->set_tensor(std::move(*bytes));
    return grpc::Status::OK;
  }

 private:
  Status Authenticate(const grpc::ServerContext& context, std::string_view method) const {
    if (token_.empty()) return Status::OK();
    const auto& metadata = context.client_metadata();
    auto it = metadata.find(kClusterTokenHeader);
    if (it != metadata.end() && SameToken(std::string_view(it->second.data(), it->second.size()), token_)) {
      return Status::OK();
    }
    const char* why = it == metadata.end() ? "without the cluster token" : "with a wrong cluster token";
    Log(LogSeverity::kWarning, StrCat(task_name_, ": refused ", method, " from ", context.peer(), " ", why));
    return errors::Unauthenticated(task_name_, " refused ", method, ": the request came ", why,
                                   " (TESSERA_CLUSTER_TOKEN)");
  }

  const std::string task_name_;
  const std::shared_ptr<Server> local_;
  const std::string token_;
};

}  // namespace

struct ClusterServer::Impl {
  std::unique_ptr<WorkerService> service;
  std::unique_ptr<grpc::Server> server;
  std::mutex mu;
  std::condition_variable cv;
  bool stopped = false;  // guarded by mu
};

StatusOr<std::unique_ptr<ClusterServer>> ClusterServer::Create(const ClusterSpec& cluster, std::string_view job,
                                                               int task, ClusterServerOptions options) {
  ASSIGN_OR_RETURN(std::string address, cluster.TaskAddress(job, task));
  std::unique_ptr<ClusterServer> s(new ClusterServer());
  s->task_name_ = TaskName(job, task);
  ASSIGN_OR_RETURN(s->local_, Server::CreateForTask(options.config, job, task));
  if (options.token.empty() && !IsLoopback(address)) {
    Log(LogSeverity::kWarning, StrCat(s->task_name_, " serves ", address,
                                      " without a cluster token: anyone who can reach it can run graphs on it. "
                                      "Set TESSERA_CLUSTER_TOKEN or --token-file."));
  }
  s->impl_ = std::make_unique<Impl>();
  s->impl_->service = std::make_unique<WorkerService>(s->task_name_, s->local_, std::move(options.token));
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(s->impl_->service.get());
  // Two tasks on one address would split its connections between them: the second must fail.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Tensors travel whole: no 4 MiB cap on a message.
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(-1);
  s->impl_->server = builder.BuildAndStart();
  if (s->impl_->server == nullptr || port == 0) {
    return errors::Unavailable(s->task_name_, " cannot listen on ", address,
                               ": the port is in use or the address is not one of this machine's");
  }
  s->target_ = StrCat("grpc://", address);
  return s;
}

ClusterServer::~ClusterServer() {
  if (impl_ == nullptr) return;
  Stop();
  Join();
}

void ClusterServer::Stop(std::chrono::milliseconds grace) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopped) return;
  }
  if (impl_->server != nullptr) impl_->server->Shutdown(std::chrono::system_clock::now() + grace);
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->stopped = true;
  impl_->cv.notify_all();
}

void ClusterServer::Join() {
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->cv.wait(lock, [this] { return impl_->stopped; });
}

StatusOr<TaskStatus> GetTaskStatus(std::string_view address, const std::string& token,
                                   std::chrono::milliseconds timeout) {
  if (address.starts_with("grpc://")) address.remove_prefix(7);
  auto stub = rpc::WorkerService::NewStub(NewWorkerChannel(std::string(address)));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  if (!token.empty()) context.AddMetadata(kClusterTokenHeader, token);
  rpc::GetStatusRequest request;
  rpc::GetStatusResponse response;
  RETURN_IF_ERROR(FromGrpc(stub->GetStatus(&context, request, &response), StrCat("task at ", address)));
  TaskStatus status;
  status.task = response.task();
  for (const rpc::DeviceAttributes& a : response.devices()) {
    status.devices.push_back(
        {a.name(), a.device_type(), a.memory_limit(), a.physical_device_desc(), a.incarnation()});
  }
  return status;
}

}  // namespace tessera
