#include "runtime/local_function_runtime.h"

#include <mutex>

#include "kernels/vector_call_frame.h"
#include "runtime/executor.h"
#include "runtime/subgraph.h"

namespace tessera {
namespace {

class LocalFunction : public InstantiatedFunction {
 public:
  LocalFunction(std::unique_ptr<Executor> executor, std::vector<DataType> arg_types, FunctionSignature signature)
      : executor_(std::move(executor)), arg_types_(std::move(arg_types)), signature_(std::move(signature)) {}

  Status Run(std::vector<Tensor> args, std::vector<Tensor>* rets) const override {
    if (args.size() != arg_types_.size()) {
      return errors::InvalidArgument("A function of ", arg_types_.size(), " arguments was called with ",
                                     args.size());
    }
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].dtype() != arg_types_[i]) {
        return errors::InvalidArgument("Argument ", i, " of a function must be ", DataTypeName(arg_types_[i]),
                                       ", got ", DataTypeName(args[i].dtype()));
      }
    }
    VectorCallFrame frame(std::move(args), signature_.ret_types.size());
    ResourceMgr call_resources;  // a call is a step of the function's own graph
    Executor::Args exec_args;
    exec_args.call_frame = &frame;
    exec_args.step_resources = &call_resources;
    RETURN_IF_ERROR(executor_->Run(exec_args));
    *rets = std::move(frame.retvals());
    return Status::OK();
  }
  const std::vector<DataType>& arg_types() const override { return arg_types_; }
  const FunctionSignature& signature() const override { return signature_; }

 private:
  std::unique_ptr<Executor> executor_;
  std::vector<DataType> arg_types_;
  FunctionSignature signature_;
};

// One thread for every body's kernels: as tf.data's default max_intra_op_parallelism of 1,
// an input pipeline's map function does not split its kernels across the intra-op pool,
// where they would take the step's threads from under its kernels (a Cast in the training
// demo's map claimed the helper of the step's convolution). Created on first use, so that a
// process without functions starts no thread for it.
StatusOr<ThreadPool*> BodyPool() {
  static std::mutex mu;
  static ThreadPool* pool = nullptr;  // guarded by mu; never destroyed: a producer thread may run a body at exit
  std::lock_guard<std::mutex> lock(mu);
  if (pool == nullptr) {
    ASSIGN_OR_RETURN(std::unique_ptr<ThreadPool> created, ThreadPool::Create("function_body", 1));
    pool = created.release();
  }
  return pool;
}

class LocalRuntime : public FunctionRuntime {
 public:
  StatusOr<std::unique_ptr<const InstantiatedFunction>> Instantiate(const FunctionDef& fn, DeviceBase* device,
                                                                     ResourceMgr* resources) const override {
    FunctionSignature signature;
    ASSIGN_OR_RETURN(std::unique_ptr<Graph> body, FunctionBodyGraph(fn, &signature));
    for (Node* n : body->nodes()) n->set_assigned_device(device->name());
    std::vector<DataType> arg_types;
    std::vector<std::string> feeds;
    for (const std::string& a : fn.args) {
      arg_types.push_back(body->FindNode(a)->output_type(0));
      feeds.push_back(a);
    }
    ASSIGN_OR_RETURN(Subgraph sub, BuildSubgraph(*body, feeds, fn.rets, {}));
    Executor::Params params;
    params.resource_mgr = resources;
    params.function_runtime = this;
    ASSIGN_OR_RETURN(params.intra_op_pool, BodyPool());
    params.lookup_device = [device](const Node&) -> StatusOr<DeviceBase*> { return device; };
    ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, Executor::Create(std::move(sub.graph), std::move(params)));
    return std::unique_ptr<const InstantiatedFunction>(
        std::make_unique<LocalFunction>(std::move(executor), std::move(arg_types), std::move(signature)));
  }
};

}  // namespace

const FunctionRuntime* LocalFunctionRuntime() {
  static const LocalRuntime runtime;
  return &runtime;
}

}  // namespace tessera
