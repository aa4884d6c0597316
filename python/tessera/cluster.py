"""TF1's clusters for between-graph replication: train.ClusterSpec, train.Server (a task
of the cluster, served by the engine over gRPC; sessions reach it by its grpc:// target)
and train.replica_device_setter (variables round-robin over the ps tasks, the rest on the
worker)."""

import json
import socket

from tessera import _core
from tessera.framework import _format_device, _parse_device

# The ops replica_device_setter sends to the parameter servers, as TensorFlow's default.
PS_OPS = ("Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable", "MutableHashTableV2",
          "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
          "MutableDenseHashTableV2", "VarHandleOp")


class ClusterSpec:
    """Jobs and their tasks' addresses: a dict of job name to a list of "host:port" (or a
    dict of task index to address), as tf.train.ClusterSpec takes it."""

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            cluster = cluster.as_dict()
        self._jobs = {}
        for job, tasks in dict(cluster).items():
            if isinstance(tasks, dict):
                self._jobs[job] = {int(i): a for i, a in tasks.items()}
            else:
                self._jobs[job] = dict(enumerate(tasks))

    @property
    def jobs(self):
        return sorted(self._jobs)

    def num_tasks(self, job_name):
        if job_name not in self._jobs:
            raise ValueError(f"No such job in cluster: {job_name!r}")
        return len(self._jobs[job_name])

    def task_indices(self, job_name):
        return sorted(self._jobs[job_name])

    def task_address(self, job_name, task_index):
        try:
            return self._jobs[job_name][task_index]
        except KeyError:
            raise ValueError(f"No task with index {task_index!r} in job {job_name!r}") from None

    def job_tasks(self, job_name):
        tasks = self._jobs[job_name]
        return [tasks.get(i) for i in range(max(tasks) + 1)] if tasks else []

    def as_dict(self):
        return {job: (self.job_tasks(job) if sorted(t) == list(range(len(t))) else dict(t))
                for job, t in self._jobs.items()}

    def __eq__(self, other):
        return isinstance(other, ClusterSpec) and self._jobs == other._jobs

    def __repr__(self):
        return f"ClusterSpec({self.as_dict()})"


def replica_device_setter(ps_tasks=0, ps_device="/job:ps", worker_device="/job:worker", merge_devices=True,
                          cluster=None, ps_ops=None, ps_strategy=None):
    """A device function: ops of `ps_ops` to "/job:ps/task:K" round-robin over the ps tasks,
    every other op to `worker_device`; fields an op's device already sets win."""
    if cluster is not None:
        cluster = ClusterSpec(cluster)
        if "ps" not in cluster.jobs:
            return None
        ps_tasks = cluster.num_tasks("ps")
    if not merge_devices:
        raise NotImplementedError("replica_device_setter(merge_devices=False) is not supported by Tessera")
    if ps_tasks == 0:
        return None
    ps_ops = tuple(ps_ops) if ps_ops is not None else PS_OPS
    counter = [0]

    def round_robin(op):
        task = counter[0]
        counter[0] = (counter[0] + 1) % ps_tasks
        return task

    strategy = ps_strategy or round_robin

    def device_function(op):
        current = _parse_device(op.device)
        if ps_device and op.type in ps_ops:
            spec = _parse_device(ps_device)
            if "job" in spec and ("job" not in current or current["job"] == spec["job"]):
                spec["task"] = str(strategy(op))
            spec.update(current)
            return _format_device(spec)
        spec = _parse_device(worker_device or "")
        spec.update(current)
        return _format_device(spec)

    return device_function


class Server:
    """tf.compat.v1.train.Server: this process's task of `cluster` (a ClusterSpec or its
    dict), serving until the process ends. `Session(server.target)` runs steps through it,
    on every task of the cluster. TESSERA_CLUSTER_TOKEN, where set, is the token every call
    between tasks must carry."""

    def __init__(self, server_or_cluster_def, job_name=None, task_index=None, protocol=None, config=None,
                 start=True):
        if protocol not in (None, "grpc"):
            raise ValueError(f"Tessera's servers speak grpc, not {protocol!r}")
        cluster = ClusterSpec(server_or_cluster_def)
        if job_name is None:
            if len(cluster.jobs) != 1:
                raise ValueError("Must specify an explicit `job_name`.")
            job_name = cluster.jobs[0]
        if task_index is None:
            indices = cluster.task_indices(job_name)
            if len(indices) != 1:
                raise ValueError("Must specify an explicit `task_index`.")
            task_index = indices[0]
        self._cluster = cluster
        self._job, self._task = job_name, int(task_index)
        self._address = cluster.task_address(job_name, self._task)
        self._config = config
        self._server = None
        if start:
            self.start()

    @property
    def target(self):
        return "grpc://" + self._address

    @property
    def server_def(self):
        raise NotImplementedError("tf.compat.v1.train.Server.server_def is not supported by Tessera yet")

    def start(self):
        if self._server is None:
            config = self._config._to_json() if self._config is not None else "{}"
            self._server = _core.Server(json.dumps(self._cluster.as_dict()), self._job, self._task, config)

    def join(self):
        """Blocks until the server stops (never, for a server nobody stops: TensorFlow's ps)."""
        self.start()
        self._server.join()

    @staticmethod
    def create_local_server(config=None, start=True):
        """A one-task cluster on a free port of this machine's loopback address."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        return Server({"localhost": [f"127.0.0.1:{port}"]}, job_name="localhost", task_index=0, config=config,
                      start=start)
