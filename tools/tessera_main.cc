#include <iostream>

#include "tools/cli.h"

int main(int argc, char** argv) {
  return tessera::RunCli(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
}
