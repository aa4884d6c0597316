#include "tools/serve.h"

#include <pthread.h>
#include <signal.h>

#include <cstdlib>
#include <map>

#include "distributed/cluster_server.h"
#include "graph/platform/file_io.h"

namespace tessera {
namespace {

struct ServeArgs {
  ClusterTask task;
  ClusterServerOptions options;
  std::optional<TlsFiles> tls;
};

StatusOr<std::string> ReadToken(const std::string& path) {
  ASSIGN_OR_RETURN(std::string token, ReadFileToString(path, "token file"));
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  if (token.empty()) return errors::InvalidArgument("token file '", path, "' is empty");
  return token;
}

StatusOr<ServeArgs> Parse(const std::vector<std::string>& args) {
  std::string cluster, job, task, config, token_file;
  TlsFlagValues tls_flags;
  ResolverFlagValues resolver_flags;
  Flags flags;
  flags.String("--cluster", &cluster).String("--job", &job).String("--task", &task).String("--config", &config)
      .String("--token-file", &token_file);
  AddTlsFlags(flags, &tls_flags);
  AddResolverFlags(flags, &resolver_flags);
  RETURN_IF_ERROR(flags.Parse(args));
  ServeArgs out;
  if (flags.Given("--cluster")) {
    if (flags.Given("--resolver")) return errors::InvalidArgument("--cluster and --resolver: give one");
    if (!flags.Given("--job") || !flags.Given("--task")) {
      return errors::InvalidArgument("--cluster needs --job and --task");
    }
    ASSIGN_OR_RETURN(out.task.cluster, ClusterSpec::FromJson(cluster));
    out.task.job = job;
    char* end = nullptr;
    const long index = std::strtol(task.c_str(), &end, 10);
    if (end == task.c_str() || *end != '\0' || index < 0 || index > INT32_MAX) {
      return errors::InvalidArgument("--task takes a task index, got '", task, "'");
    }
    out.task.task = static_cast<int>(index);
    RETURN_IF_ERROR(out.task.cluster.TaskAddress(out.task.job, out.task.task).status());
  } else {
    StatusOr<ClusterTask> resolved = ResolveFromFlags(flags, resolver_flags);
    if (!resolved.ok()) {
      return resolved.status().WithPrefix("tessera server needs --cluster, --job and --task, or a resolver's: ");
    }
    out.task = std::move(*resolved);
    if (!out.task.in_cluster) {
      return errors::InvalidArgument("the ", out.task.job, " runs beside the cluster, not in it: there is no task to "
                                     "serve");
    }
  }
  if (flags.Given("--config")) {
    ASSIGN_OR_RETURN(std::string text, ReadFileToString(config, "session config"));
    ASSIGN_OR_RETURN(out.options.config, SessionConfig::FromJson(text));
  }
  ASSIGN_OR_RETURN(out.tls, TlsFromFlags(tls_flags));
  if (flags.Given("--token-file")) {
    ASSIGN_OR_RETURN(out.options.token, ReadToken(token_file));
  } else if (const char* token = std::getenv("TESSERA_CLUSTER_TOKEN"); token != nullptr) {
    out.options.token = token;
  }
  return out;
}

}  // namespace

void AddResolverFlags(Flags& flags, ResolverFlagValues* values) {
  for (const char* flag : {"--resolver", "--jobs", "--port-base", "--coordinator"}) {
    flags.String(flag, &(*values)[flag]);
  }
}

StatusOr<ClusterTask> ResolveFromFlags(const Flags& flags, const ResolverFlagValues& values) {
  ClusterResolverOptions options;
  if (flags.Given("--jobs")) {
    ASSIGN_OR_RETURN(options.jobs, ParseJobCounts(values.at("--jobs")));
  }
  if (flags.Given("--port-base")) {
    const std::string& text = values.at("--port-base");
    char* end = nullptr;
    const long port = std::strtol(text.c_str(), &end, 10);
    if (end == text.c_str() || *end != '\0' || port < 1 || port > 65535) {
      return errors::InvalidArgument("--port-base takes a port from 1 to 65535, got '", text, "'");
    }
    options.port_base = static_cast<int>(port);
  }
  if (flags.Given("--coordinator")) options.coordinator = values.at("--coordinator");
  const std::string name = flags.Given("--resolver") ? values.at("--resolver") : "auto";
  ASSIGN_OR_RETURN(std::unique_ptr<ClusterResolver> resolver,
                   MakeClusterResolver(name, ProcessEnvironment(), std::move(options)));
  return resolver->Resolve();
}

void AddTlsFlags(Flags& flags, TlsFlagValues* values) {
  for (const char* flag : {"--tls-cert", "--tls-key", "--tls-ca"}) flags.String(flag, &(*values)[flag]);
}

StatusOr<std::optional<TlsFiles>> TlsFromFlags(const TlsFlagValues& flags) {
  TlsFiles files;
  int given = 0;
  for (auto [flag, field] : {std::pair{"--tls-cert", &files.cert_file}, {"--tls-key", &files.key_file},
                             {"--tls-ca", &files.ca_file}}) {
    auto it = flags.find(flag);
    if (it == flags.end() || !it->second) continue;
    if (it->second->empty()) return errors::InvalidArgument(flag, " needs a file, got ''");
    *field = *it->second;
    ++given;
  }
  if (given == 0) return std::optional<TlsFiles>();
  if (given != 3) return errors::InvalidArgument("TLS needs all of --tls-cert, --tls-key and --tls-ca");
  return std::optional<TlsFiles>(files);
}

int ServeClusterTask(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  StatusOr<ServeArgs> parsed = Parse(args);
  Status ready = parsed.status();
  if (ready.ok() && parsed->tls) ready = UseTls(*parsed->tls);
  if (!ready.ok()) {
    err << "tessera server: " << ready.ToString() << "\n";
    return 1;
  }
  // The server's threads inherit this mask, so the signals reach only the sigwait below.
  sigset_t stop_signals, previous;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, &previous);
  StatusOr<std::unique_ptr<ClusterServer>> server =
      ClusterServer::Create(parsed->task.cluster, parsed->task.job, parsed->task.task, std::move(parsed->options));
  if (!server.ok()) {
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    err << "tessera server: " << server.status().ToString() << "\n";
    return 1;
  }
  out << "Started server with target: " << (*server)->target() << std::endl;
  int signal = 0;
  sigwait(&stop_signals, &signal);
  (*server)->Stop();
  (*server)->Join();
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  out << "Stopped server " << (*server)->task_name() << " on signal " << signal << std::endl;
  return 0;
}

}  // namespace tessera
