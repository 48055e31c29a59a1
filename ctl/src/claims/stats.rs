//! The statistics a claim is judged with: means, Student-t 95% intervals
//! (of one sample, of paired differences, of two samples by Welch), each
//! with the number of values it rests on.

/// The two-sided 97.5% quantile of Student's t with `df` degrees of freedom
/// (tabulated to 30, then interpolated in 1/df towards the normal's 1.96).
pub fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => T[df - 1],
        // Linear in 1/df between df = 30 (2.042) and infinity (1.960).
        _ => 1.960 + (2.042 - 1.960) * 30.0 / df as f64,
    }
}

/// A mean with its 95% interval over `n` values (no interval for n < 2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    pub mean: f64,
    pub lo: f64,
    pub hi: f64,
    pub n: usize,
}

impl Estimate {
    /// The t interval of the mean of `xs` (NaN-free).
    pub fn of(xs: &[f64]) -> Estimate {
        let n = xs.len();
        let mean = xs.iter().sum::<f64>() / n as f64;
        if n < 2 {
            return Estimate {
                mean,
                lo: f64::NAN,
                hi: f64::NAN,
                n,
            };
        }
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let half = t975(n - 1) * (var / n as f64).sqrt();
        Estimate {
            mean,
            lo: mean - half,
            hi: mean + half,
            n,
        }
    }

    /// Welch's interval of mean(b) - mean(a), for two unpaired samples.
    pub fn welch(a: &[f64], b: &[f64]) -> Estimate {
        let (ea, eb) = (Estimate::of(a), Estimate::of(b));
        let mean = eb.mean - ea.mean;
        let n = a.len().min(b.len());
        if a.len() < 2 || b.len() < 2 {
            return Estimate {
                mean,
                lo: f64::NAN,
                hi: f64::NAN,
                n,
            };
        }
        let var = |xs: &[f64], m: f64| {
            xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64
        };
        let (sa, sb) = (
            var(a, ea.mean) / a.len() as f64,
            var(b, eb.mean) / b.len() as f64,
        );
        let se = (sa + sb).sqrt();
        // Welch-Satterthwaite degrees of freedom, rounded down.
        let df = if se == 0.0 {
            a.len() + b.len() - 2
        } else {
            let d = (sa + sb).powi(2)
                / (sa.powi(2) / (a.len() - 1) as f64 + sb.powi(2) / (b.len() - 1) as f64);
            (d.floor() as usize).max(1)
        };
        let half = t975(df) * se;
        Estimate {
            mean,
            lo: mean - half,
            hi: mean + half,
            n,
        }
    }

    /// Whether there is an interval (two or more values).
    pub fn has_interval(&self) -> bool {
        self.lo.is_finite() && self.hi.is_finite()
    }

    /// -1 when the whole interval is below zero, 1 when above, 0 when it
    /// holds zero (or there is no interval).
    pub fn sign(&self) -> i8 {
        if !self.has_interval() {
            0
        } else if self.hi < 0.0 {
            -1
        } else if self.lo > 0.0 {
            1
        } else {
            0
        }
    }

    /// "12.3 [11.9, 12.7]" with `decimals`, or the mean alone without an interval.
    pub fn show(&self, decimals: usize) -> String {
        if self.has_interval() {
            format!(
                "{:.d$} [{:.d$}, {:.d$}]",
                self.mean,
                self.lo,
                self.hi,
                d = decimals
            )
        } else {
            format!("{:.d$}", self.mean, d = decimals)
        }
    }
}

/// Decimals that show `x` with about three significant digits.
pub fn decimals_for(x: f64) -> usize {
    let a = x.abs();
    if !a.is_finite() || a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        3
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_t_interval_of_a_known_sample() {
        // 10, 12, 14: mean 12, s = 2, se = 2/sqrt(3), t(2) = 4.303.
        let e = Estimate::of(&[10.0, 12.0, 14.0]);
        assert_eq!(e.mean, 12.0);
        let half = 4.303 * 2.0 / 3f64.sqrt();
        assert!((e.hi - 12.0 - half).abs() < 1e-9 && (12.0 - e.lo - half).abs() < 1e-9);
        assert_eq!(e.sign(), 1);
        assert_eq!(Estimate::of(&[-1.0, 1.0]).sign(), 0);
        assert_eq!(
            Estimate::of(&[5.0]).sign(),
            0,
            "one value: no interval, no sign"
        );
        assert_eq!(Estimate::of(&[5.0]).show(1), "5.0");
    }

    #[test]
    fn t_quantiles_fall_towards_the_normal() {
        assert_eq!(t975(4), 2.776);
        assert!(t975(31) < t975(30) && t975(31) > 1.96);
        assert!((t975(100_000) - 1.96).abs() < 1e-3);
        assert!(t975(0).is_infinite());
    }

    #[test]
    fn welch_separates_distant_samples_and_not_overlapping_ones() {
        let w = Estimate::welch(&[1.0, 1.1, 0.9], &[5.0, 5.2, 4.8]);
        assert!((w.mean - 4.0).abs() < 1e-9 && w.sign() == 1);
        let w = Estimate::welch(&[1.0, 3.0, 2.0], &[2.5, 1.5, 2.0]);
        assert_eq!(w.sign(), 0);
    }
}
