"""A traced step as Chrome's trace viewer (chrome://tracing, Perfetto) shows it: what
TensorFlow 1.x scripts get from tensorflow.python.client.timeline, here
`from tessera import timeline`:

    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    metadata = tf.RunMetadata()
    sess.run(train, options=options, run_metadata=metadata)
    with open("timeline.json", "w") as f:
        f.write(timeline.Timeline(metadata.step_stats).generate_chrome_trace_format())
"""


class Timeline:
    def __init__(self, step_stats, graph=None):
        self._step_stats = step_stats

    def generate_chrome_trace_format(self, show_dataflow=True, show_memory=False):
        """The step as Chrome trace JSON: a row per device and thread, an event per node."""
        return self._step_stats._chrome_trace
