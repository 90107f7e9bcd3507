// An outside project using the installed graft package.
#include <graft/graft.h>

#include <cmath>
#include <iostream>

int main() {
  namespace g = graft;
  g::Array x = g::array({1.0f, 2.0f, 3.0f});
  auto f = [](const g::Array& x) { return g::sum(g::sin(x)); };
  auto dx = g::jit(g::grad(f))(x).to_vector<float>();
  bool ok = std::fabs(dx[1] - std::cos(2.0f)) < 1e-6f;
  std::cout << (ok ? "grad ok" : "grad WRONG") << "\n";
  return ok ? 0 : 1;
}
