// Student's t distribution (Boost.Math), for confidence and prediction
// intervals of small samples: seed ensembles and reference bands
// (recipes/results/ensemble.h, recipes/judging/reference_band.h).
#pragma once

namespace deep500::metrics {

// The value below which a fraction p (0 < p < 1) of the distribution with
// `dof` > 0 degrees of freedom lies; Error otherwise.
double student_t_quantile(double p, double dof);

// P(T <= t) for `dof` > 0 degrees of freedom.
double student_t_cdf(double t, double dof);

}  // namespace deep500::metrics
