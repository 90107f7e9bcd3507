// The Kolmogorov-Smirnov statistic of samples against a CDF, for the samplers' tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "testing.h"

namespace graft::testing {

/// sup_x |F_n(x) - cdf(x)| over the samples' empirical CDF F_n.
inline double ks_statistic(const Array& samples, const std::function<double(double)>& cdf) {
  std::vector<double> x = values(samples);
  std::sort(x.begin(), x.end());
  double n = static_cast<double>(x.size()), d = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double f = cdf(x[i]);
    d = std::max({d, std::fabs(f - static_cast<double>(i) / n), std::fabs(static_cast<double>(i + 1) / n - f)});
  }
  return d;
}

}  // namespace graft::testing
