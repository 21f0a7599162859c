#include "metrics/student_t.h"

#include <boost/math/distributions/students_t.hpp>

#include "deep/error.h"

namespace deep500::metrics {

double student_t_quantile(double p, double dof) {
  DEEP500_CHECK(dof > 0 && p > 0 && p < 1,
                "Student's t quantile: expected 0 < p < 1 and dof > 0, got p ", p, ", dof ", dof);
  return boost::math::quantile(boost::math::students_t_distribution<double>(dof), p);
}

double student_t_cdf(double t, double dof) {
  DEEP500_CHECK(dof > 0, "Student's t distribution: expected dof > 0, got ", dof);
  return boost::math::cdf(boost::math::students_t_distribution<double>(dof), t);
}

}  // namespace deep500::metrics
