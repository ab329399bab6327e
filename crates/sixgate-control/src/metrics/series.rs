//! Metric values computed at scrape time, as `prometheus-client` metrics: a list
//! of labelled samples (every label set given, zeros included, so a series never
//! appears late) and a histogram from pre-counted buckets.

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;

/// One sample's labels, e.g. `[("worker", "0"), ("direction", "6to4")]`.
pub type Labels = Vec<(&'static str, String)>;

/// Counter or gauge samples of one metric.
#[derive(Debug)]
pub struct Samples {
    kind: MetricType,
    values: Vec<(Labels, u64)>,
}

impl Samples {
    pub fn counter() -> Self {
        Samples {
            kind: MetricType::Counter,
            values: Vec::new(),
        }
    }

    pub fn gauge() -> Self {
        Samples {
            kind: MetricType::Gauge,
            values: Vec::new(),
        }
    }

    /// Add one sample.
    pub fn with(mut self, labels: Labels, v: u64) -> Self {
        self.values.push((labels, v));
        self
    }

    /// Add one unlabelled sample.
    pub fn value(self, v: u64) -> Self {
        self.with(Vec::new(), v)
    }
}

impl Samples {
    fn sample(&self, e: &mut MetricEncoder, v: u64) -> Result<(), std::fmt::Error> {
        match self.kind {
            MetricType::Counter => e.encode_counter::<NoLabelSet, _, u64>(&v, None),
            _ => e.encode_gauge(&v),
        }
    }
}

impl EncodeMetric for Samples {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        for (labels, v) in &self.values {
            // No labels: `name value`, not `name{} value`.
            if labels.is_empty() {
                self.sample(&mut encoder, *v)?;
            } else {
                self.sample(&mut encoder.encode_family(labels)?, *v)?;
            }
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        self.kind
    }
}

/// A ratio gauge (0..=1).
#[derive(Debug)]
pub struct Ratios(pub Vec<(Labels, f64)>);

impl EncodeMetric for Ratios {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        for (labels, v) in &self.0 {
            encoder.encode_family(labels)?.encode_gauge(v)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Gauge
    }
}

/// A histogram whose observations were already counted into buckets.
#[derive(Debug)]
pub struct Histogram {
    /// Sum of the observations.
    pub sum: f64,
    /// `(upper bound, observations in this bucket alone)`, ascending, with
    /// `f64::INFINITY` last. The encoder writes them cumulative (`le`: at most).
    pub buckets: Vec<(f64, u64)>,
}

impl EncodeMetric for Histogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let count = self.buckets.iter().map(|b| b.1).sum();
        encoder.encode_histogram::<NoLabelSet>(self.sum, count, &self.buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}
