// `tessera train`: the command line of Train (training/trainer.h): its flags, and how its
// progress shows (redrawn in place on a terminal, a plain line every few seconds in a file
// or a pipe).
//
//   tessera train --epochs 2 --devices 2 --checkpoint cnn.ckpt
//
// Both functions are thread-safe but for the environment a resolver reads.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "training/trainer.h"

namespace tessera {

// args[0] is "train". InvalidArgument naming the flag for a flag that is not train's, a
// value that does not parse, or flags that do not go together; the cluster and task of
// the between-graph modes come from the flags or from a resolver (TF_CONFIG, srun).
StatusOr<TrainOptions> ParseTrainArgs(const std::vector<std::string>& args);

// Parses, trains and prints to `out`; 0 when trained, 2 for bad flags (with `usage`), 1 for a
// failed training, said on `err`.
int RunTrainCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                    const std::string& usage);

}  // namespace tessera
