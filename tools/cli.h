// The `tessera` command line, as a function so tests can drive it without a subprocess.
//
//   tessera run GRAPH.json --fetch y[,z:1] [--target t] [--feed x=FILE.json]...
//               [--config CONFIG.json] [--log-device-placement] [--allow-soft-placement]
//               [--trace OUT.json]
//   tessera place GRAPH.json [--config CONFIG.json] [--allow-soft-placement]
//   tessera dot GRAPH.json [--config CONFIG.json] [--allow-soft-placement]
//   tessera export GRAPH.json      (the validated graph, every attr filled in)
//   tessera train [--epochs 2] [--devices 2] [--mode mirrored] [--batch 128] [--threads N] ...
//                 (tools/train.h: Train of training/trainer.h, the Fashion-MNIST CNN)
//   tessera server, devices, convert   (see the usage RunCli prints)
//
// Every command's flags are read by one parser (flags.h). RunCli is the program's
// composition point: it registers every device provider the build links.
//
// `run` prints the fetched tensors as one JSON object on stdout, the placement log on
// stderr, and on error "<Code>: <message>" on stderr with exit status 1 (2 for bad usage).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tessera {

int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace tessera
