// Synthetic job specs for benchmarks: many chains of loose ops with stats/standardize pairs
// and a tight node per chain, sized by node count. No dataset files needed (chains start from
// noop nodes), so `coupler plan` can read them anywhere.
#pragma once

#include <string>

namespace coupler::bench {

std::string MakeSyntheticSpec(int nodes, int chain_length = 100, bool json = false);

}  // namespace coupler::bench
