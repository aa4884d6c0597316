#include "graph/builder/dataset_ops.h"

#include <set>

#include "graph/builder/op_builder.h"
#include "graph/builder/ops.h"

namespace tessera::ops {
namespace {

// Dataset ops take int64 scalars; a literal like 7 arrives as int32.
Input Int64(const Input& in) {
  if (in.is_constant() && in.tensor().dtype() == DataType::kInt32 && in.tensor().rank() == 0) {
    return Tensor::Scalar<int64_t>(in.tensor().data<int32_t>()[0]);
  }
  return in;
}

// The constant value of an int input, or -1 when it is only known at run time.
int64_t StaticInt(const Input& in) {
  if (in.is_constant() && in.tensor().rank() == 0) {
    if (in.tensor().dtype() == DataType::kInt64) return in.tensor().data<int64_t>()[0];
    if (in.tensor().dtype() == DataType::kInt32) return in.tensor().data<int32_t>()[0];
  }
  return -1;
}

AttrMap ElementAttrs(const std::vector<DataType>& dtypes, const std::vector<TensorShape>& shapes) {
  return {{"output_types", dtypes}, {"output_shapes", shapes}};
}

Dataset Make(const Scope& s, std::string_view op, std::vector<Input> inputs, AttrMap attrs,
             std::vector<DataType> dtypes, std::vector<TensorShape> shapes) {
  if (!attrs.contains("Toutput_types")) attrs.emplace("output_types", dtypes);
  attrs.emplace("output_shapes", shapes);
  Output handle = Build(s, op, std::move(inputs), std::move(attrs));
  if (handle.node == nullptr) return {};
  return {handle, std::move(dtypes), std::move(shapes)};
}

Dataset Unary(const Scope& s, std::string_view op, const Dataset& input, std::vector<Input> more,
              AttrMap attrs = {}) {
  std::vector<Input> inputs = {input.handle};
  inputs.insert(inputs.end(), more.begin(), more.end());
  return Make(s, op, std::move(inputs), std::move(attrs), input.dtypes, input.shapes);
}

// TensorDataset and TensorSliceDataset: the element follows the components' static types and
// shapes, less the first dimension for slices.
Dataset FromComponents(const Scope& s, std::string_view op, const std::vector<Input>& components, bool slice) {
  std::vector<Input> inputs;
  std::vector<DataType> dtypes;
  std::vector<TensorShape> shapes;
  for (const Input& c : components) {
    Output o = s.AsOutput(c);
    if (o.node == nullptr) return {};
    inputs.push_back(o);
    dtypes.push_back(o.type());
    TensorShape shape = o.node->output_shape(o.index);
    if (slice && !shape.unknown_rank()) {
      TensorShape row;
      for (int d = 1; d < shape.rank(); ++d) row.AddDim(shape.dim(d));
      shape = row;
    }
    shapes.push_back(shape);
  }
  return Make(s, op, std::move(inputs), {{"Toutput_types", dtypes}}, dtypes, shapes);
}

std::shared_ptr<const FunctionDef> Share(FunctionDef fn) { return std::make_shared<const FunctionDef>(std::move(fn)); }

// Prepends a dimension of `batch` to each shape (an unknown rank stays unknown).
std::vector<TensorShape> Batched(const std::vector<TensorShape>& rows, int64_t batch) {
  std::vector<TensorShape> shapes;
  for (const TensorShape& r : rows) {
    if (r.unknown_rank()) {
      shapes.push_back(r);
      continue;
    }
    TensorShape b({batch});
    for (int d = 0; d < r.rank(); ++d) b.AddDim(r.dim(d));
    shapes.push_back(b);
  }
  return shapes;
}

}  // namespace

Dataset TensorDataset(const Scope& s, const std::vector<Input>& components) {
  return FromComponents(s, "TensorDataset", components, false);
}

Dataset TensorSliceDataset(const Scope& s, const std::vector<Input>& components) {
  return FromComponents(s, "TensorSliceDataset", components, true);
}

Dataset RangeDataset(const Scope& s, Input start, Input stop, Input step) {
  return Make(s, "RangeDataset", {Int64(start), Int64(stop), Int64(step)}, {}, {DataType::kInt64}, {TensorShape()});
}

Dataset TextLineDataset(const Scope& s, Input filenames) {
  Output handle = Build(s, "TextLineDataset", {std::move(filenames)});
  if (handle.node == nullptr) return {};
  return {handle, {DataType::kString}, {TensorShape()}};
}

Dataset IdxDataset(const Scope& s, Input filename, TensorShape record_shape) {
  Output handle = Build(s, "IdxDataset", {std::move(filename)}, {{"element_shape", record_shape}});
  if (handle.node == nullptr) return {};
  return {handle, {DataType::kUInt8}, {record_shape}};
}

Dataset Repeat(const Scope& s, const Dataset& input, Input count) {
  return Unary(s, "RepeatDataset", input, {Int64(count)});
}

Dataset Skip(const Scope& s, const Dataset& input, Input count) {
  return Unary(s, "SkipDataset", input, {Int64(count)});
}

Dataset Take(const Scope& s, const Dataset& input, Input count) {
  return Unary(s, "TakeDataset", input, {Int64(count)});
}

Dataset Batch(const Scope& s, const Dataset& input, Input batch_size, const BatchAttrs& attrs) {
  const int64_t batch = attrs.drop_remainder ? StaticInt(batch_size) : -1;
  return Make(s, "BatchDatasetV2", {input.handle, Int64(batch_size), attrs.drop_remainder}, {}, input.dtypes,
              Batched(input.shapes, batch));
}

Dataset PaddedBatch(const Scope& s, const Dataset& input, Input batch_size,
                    const std::vector<TensorShape>& padded_shapes, const std::vector<Input>& padding_values,
                    const BatchAttrs& attrs) {
  std::vector<Input> inputs = {input.handle, Int64(batch_size)};
  for (const TensorShape& p : padded_shapes) {
    std::vector<int64_t> dims;
    for (int d = 0; d < p.rank(); ++d) dims.push_back(p.dim(d));
    inputs.push_back(Tensor::FromVector(dims));
  }
  inputs.insert(inputs.end(), padding_values.begin(), padding_values.end());
  inputs.push_back(attrs.drop_remainder);
  const int64_t batch = attrs.drop_remainder ? StaticInt(batch_size) : -1;
  return Make(s, "PaddedBatchDatasetV2", std::move(inputs),
              {{"Toutput_types", input.dtypes}, {"N", static_cast<int64_t>(padded_shapes.size())}}, input.dtypes,
              Batched(padded_shapes, batch));
}

Dataset Shuffle(const Scope& s, const Dataset& input, Input buffer_size, const ShuffleAttrs& attrs) {
  return Unary(s, "ShuffleDataset", input, {Int64(buffer_size), attrs.seed, attrs.seed2},
               {{"reshuffle_each_iteration", attrs.reshuffle_each_iteration}});
}

Dataset Prefetch(const Scope& s, const Dataset& input, Input buffer_size) {
  return Unary(s, "PrefetchDataset", input, {Int64(buffer_size)});
}

Dataset Cache(const Scope& s, const Dataset& input) { return Unary(s, "CacheDataset", input, {""}); }

Dataset Zip(const Scope& s, const std::vector<Dataset>& inputs) {
  std::vector<Input> handles;
  std::vector<DataType> dtypes;
  std::vector<TensorShape> shapes;
  for (const Dataset& d : inputs) {
    handles.push_back(d.handle);
    dtypes.insert(dtypes.end(), d.dtypes.begin(), d.dtypes.end());
    shapes.insert(shapes.end(), d.shapes.begin(), d.shapes.end());
  }
  return Make(s, "ZipDataset", std::move(handles), {{"N", static_cast<int64_t>(inputs.size())}}, dtypes, shapes);
}

Dataset Map(const Scope& s, const Dataset& input, const FunctionBody& f, int64_t num_parallel_calls) {
  if (!s.ok() || input.handle.node == nullptr) return {};
  FunctionSignature sig;
  StatusOr<FunctionDef> fn = BuildFunction(input.dtypes, input.shapes, f, &sig);
  if (!fn.ok()) {
    s.UpdateStatus(fn.status().WithPrefix("In a map function: "));
    return {};
  }
  AttrMap attrs{{"f", Share(std::move(*fn))}};
  if (num_parallel_calls == 1) return Make(s, "MapDataset", {input.handle}, std::move(attrs), sig.ret_types, sig.ret_shapes);
  return Make(s, "ParallelMapDataset", {input.handle, static_cast<int32_t>(num_parallel_calls)}, std::move(attrs),
              sig.ret_types, sig.ret_shapes);
}

Dataset Filter(const Scope& s, const Dataset& input, const Predicate& predicate) {
  if (!s.ok() || input.handle.node == nullptr) return {};
  StatusOr<FunctionDef> fn = BuildFunction(input.dtypes, input.shapes,
                                           [&](const Scope& fs, const std::vector<Output>& args) {
                                             return std::vector<Output>{predicate(fs, args)};
                                           });
  if (!fn.ok()) {
    s.UpdateStatus(fn.status().WithPrefix("In a filter predicate: "));
    return {};
  }
  return Unary(s, "FilterDataset", input, {}, {{"predicate", Share(std::move(*fn))}});
}

Dataset Interleave(const Scope& s, const Dataset& input, const DatasetFunction& f, int64_t cycle_length,
                   int64_t block_length) {
  if (!s.ok() || input.handle.node == nullptr) return {};
  Dataset inner;
  StatusOr<FunctionDef> fn = BuildFunction(input.dtypes, input.shapes,
                                           [&](const Scope& fs, const std::vector<Output>& args) {
                                             inner = f(fs, args);
                                             return std::vector<Output>{inner.handle};
                                           });
  if (!fn.ok()) {
    s.UpdateStatus(fn.status().WithPrefix("In an interleave function: "));
    return {};
  }
  return Make(s, "InterleaveDataset", {input.handle, cycle_length, block_length}, {{"f", Share(std::move(*fn))}},
              inner.dtypes, inner.shapes);
}

Iterator InitializableIterator(const Scope& s, const Dataset& dataset) {
  if (!s.ok() || dataset.handle.node == nullptr) return {};
  Output handle = Build(s, "Iterator", {}, ElementAttrs(dataset.dtypes, dataset.shapes));
  if (handle.node == nullptr) return {};
  Output init = Build(s.WithOpName(handle.node->name() + "/initializer"), "MakeIterator", {dataset.handle, handle});
  if (init.node == nullptr) return {};
  return {handle, init.op(), dataset.dtypes, dataset.shapes};
}

Iterator OneShotIterator(const Scope& s, const Dataset& dataset) {
  if (!s.ok() || dataset.handle.node == nullptr) return {};
  GraphSpec def;
  Status status = s.ToSpec(&def);
  if (!status.ok()) return {};
  // The factory's body: the dataset's node and everything it depends on.
  std::map<std::string_view, const NodeSpec*> by_name;
  for (const NodeSpec& n : def.nodes) by_name[n.name] = &n;
  std::set<std::string> keep;
  std::vector<std::string> todo = {dataset.handle.node->name()};
  while (!todo.empty()) {
    std::string name = std::move(todo.back());
    todo.pop_back();
    if (!keep.insert(name).second) continue;
    for (const std::string& in : by_name.at(name)->inputs) {
      StatusOr<TensorId> id = ParseTensorName(in);
      if (id.ok()) todo.emplace_back(id->node);
    }
  }
  auto factory = std::make_shared<FunctionDef>();
  for (const NodeSpec& n : def.nodes) {
    if (!keep.contains(n.name)) continue;
    factory->body.nodes.push_back(n);
    factory->body.nodes.back().colocate_with.clear();
  }
  factory->rets = {dataset.handle.name()};
  AttrMap attrs = ElementAttrs(dataset.dtypes, dataset.shapes);
  attrs.emplace("dataset_factory", std::shared_ptr<const FunctionDef>(std::move(factory)));
  Output handle = Build(s, "OneShotIterator", {}, std::move(attrs));
  if (handle.node == nullptr) return {};
  return {handle, Operation(), dataset.dtypes, dataset.shapes};
}

std::vector<Output> GetNext(const Scope& s, const Iterator& iterator) {
  if (iterator.handle.node == nullptr) {
    s.UpdateStatus(errors::InvalidArgument("GetNext of an iterator that failed to build"));
    return {};
  }
  return AllOutputs(Build(s, "IteratorGetNext", {iterator.handle}, ElementAttrs(iterator.dtypes, iterator.shapes)));
}

}  // namespace tessera::ops
