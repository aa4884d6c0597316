// Sessions whose target is a cluster task, "grpc://host:port": the graph goes to that task
// (the master), which places it over its devices and runs every step there; feeds and
// fetches travel with the RPCs. Variables and queues live in the master task's resource
// containers, so every client naming the same task shares them and they outlive the client;
// Session::Reset(target, containers) drops them.
//
//   RegisterGrpcSessionFactory();   // once per process, before the first grpc:// target
//   auto session = Session::Create("grpc://127.0.0.1:2223", config, graph);
//
// The cluster token, when the servers have one, comes from TESSERA_CLUSTER_TOKEN. Every RPC
// has a deadline: the step's (RunOptions.timeout_in_ms, else operation_timeout_in_ms) or,
// for creating and closing, 60 s; a master that does not answer is Unavailable naming it.
// A GrpcSession is thread-safe as every Session: steps may run concurrently.
#pragma once

namespace tessera {

// Registers the factory for the "grpc://" prefix; calling it again does nothing.
void RegisterGrpcSessionFactory();

}  // namespace tessera
