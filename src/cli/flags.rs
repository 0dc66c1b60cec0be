//! The library's settings as the command line names them. Each layer names a setting it
//! refuses by a typed [`Setting`](crate::util::setting::SettingError) of its own (the
//! settings struct's field); here each is mapped to its flag, and the library's errors that
//! carry one become messages naming the flag the user typed (`--warmup-s -1: seconds in
//! [0, 86400]`), with the CLI's hints (`pass --shape x:<dims>`). `grade` does the same with
//! profile keys (`grade::stages`).

use std::fmt::{Debug, Display};

use crate::util::setting::SettingError;

/// A library setting's flag.
pub trait Flag {
    fn flag(&self) -> &'static str;
}

impl Flag for crate::load::Setting {
    fn flag(&self) -> &'static str {
        use crate::load::Setting::*;
        match self {
            Url => "--url",
            Slo => "--slo",
            ErrorBudget => "--error-budget",
            MaxRate => "--max-rate",
            StartRate => "--start-rate",
            Precision => "--search-precision",
            Concurrency => "--concurrency",
            StepDuration => "--step-duration",
            WarmupS => "--warmup-s",
            Timeout => "--timeout",
            MaxConnections => "--max-connections",
            MaxResponseBytes => "--max-response-bytes",
            MaxErrorBytes => "--max-error-bytes",
            WarmupRequests => "--warmup-requests",
            RequestCount => "--request-count",
            MaxOutputLen => "--max-output-len",
            MaxBatchSize => "--max-batch-size",
            RequestRate => "--request-rate",
            MaxEventBytes => "--max-event-bytes",
            SamplingParams => "--sampling-params",
            Tokenizer => "--tokenizer",
            Dataset => "--dataset",
            TestAccuracy => "--test-accuracy",
            SyntheticConfig => "--synthetic-config",
            InputFile => "--input-file",
            CaCert => "--cacert",
            Cert => "--cert",
            Key => "--key",
            Crl => "--crl",
        }
    }
}

impl Flag for crate::server::Setting {
    fn flag(&self) -> &'static str {
        use crate::server::Setting::*;
        match self {
            Shapes => "--shape",
            Instances => "--instances",
            MaxBatch => "--max-batch",
            BatchTimeoutUs => "--batch-timeout-us",
            MaxInflight => "--max-inflight",
            MaxBodyMb => "--max-body-mb",
            HeaderTimeout => "--header-timeout",
            BodyTimeout => "--body-timeout",
            IdleTimeout => "--idle-timeout",
            MaxConnections => "--max-connections",
            DrainTimeout => "--drain-timeout",
            MaxMemoryMb => "--max-memory-mb",
            ApiKey => "--api-key",
            TlsCert => "--tls-cert",
            TlsKey => "--tls-key",
        }
    }
}

impl Flag for crate::data::Setting {
    fn flag(&self) -> &'static str {
        match self {
            crate::data::Setting::InputFiles => "--input",
            crate::data::Setting::Shapes => "--shape",
            crate::data::Setting::InputsPath => "--inputs",
        }
    }
}

impl Flag for crate::measure::Setting {
    fn flag(&self) -> &'static str {
        match self {
            crate::measure::Setting::Percentile => "--percentile",
            crate::measure::Setting::Batch => "--batch",
            crate::measure::Setting::Inputs => "--inputs",
            crate::measure::Setting::Task => "--task",
        }
    }
}

impl Flag for crate::accuracy::Setting {
    fn flag(&self) -> &'static str {
        match self {
            crate::accuracy::Setting::Inputs => "--inputs",
            crate::accuracy::Setting::Task => "--task",
            crate::accuracy::Setting::Reference => "--reference",
        }
    }
}

impl Flag for crate::train::Setting {
    fn flag(&self) -> &'static str {
        match self {
            crate::train::Setting::Workload => "--workload",
            crate::train::Setting::Exec => "--exec",
            crate::train::Setting::Precision => "--precision",
            crate::train::Setting::ImageSize => "--image-size",
        }
    }
}

/// `serve`'s messages to its clients name a setting by its flag.
pub fn serve_flag(s: crate::server::Setting) -> &'static str {
    s.flag()
}

/// A refused setting, named by its flag.
pub fn flagged<S: Flag + Display + Debug>(e: SettingError<S>) -> anyhow::Error {
    anyhow::anyhow!(e.named(e.setting.flag()))
}

/// A load run's error (`qps`).
pub fn load(e: crate::load::Error) -> anyhow::Error {
    match e {
        crate::load::Error::Setting(s) => flagged(s),
        e => e.into(),
    }
}

/// An LLM benchmark's error.
pub fn llm(e: crate::llm::Error) -> anyhow::Error {
    match e {
        crate::llm::Error::Setting(s) => flagged(s),
        crate::llm::Error::Load(e) => load(e),
        e => e.into(),
    }
}

/// A server's error (`serve`).
pub fn server(e: crate::server::Error) -> anyhow::Error {
    use crate::server::Error;
    match e {
        Error::Setting(s) => flagged(s),
        Error::BudgetBelowBody {
            memory_mb,
            body_mb,
            need_mb,
        } => anyhow::anyhow!(
            "--max-memory-mb {memory_mb}: one request of --max-body-mb {body_mb} needs {need_mb} MB (its body and its decoded tensors); raise --max-memory-mb or lower --max-body-mb"
        ),
        Error::Data(e) => data(e),
        e => e.into(),
    }
}

/// The inputs' error (`run`, `bench`), with what to pass.
pub fn data(e: crate::data::Error) -> anyhow::Error {
    use crate::data::Error;
    match e {
        Error::Setting(s) => flagged(s),
        Error::DynamicDims { ref input, .. } => anyhow::anyhow!(
            "{e}: pass --shape {input}:<dims> (e.g. 1x3x640x640) or --input {input}=FILE.npy"
        ),
        Error::NotGiven { ref input, .. } | Error::CannotGenerate { ref input, .. } => {
            anyhow::anyhow!("{e} (--input {input}=FILE.npy)")
        }
        e => e.into(),
    }
}

/// A run's or a benchmark's error (`run`, `bench`).
pub fn measure(e: crate::measure::Error) -> anyhow::Error {
    use crate::measure::Error;
    match e {
        Error::Setting(s) => flagged(s),
        Error::Data(e) => data(e),
        Error::WantsSeries => {
            anyhow::anyhow!("a forecasting model takes --series FILE.csv, not --image")
        }
        Error::WantsImages { task } => {
            anyhow::anyhow!("a {task} model takes --image FILE, not --series")
        }
        Error::StaticBatch { .. } => anyhow::anyhow!("{e} (--batch, --peak-power)"),
        Error::Model(e) => analyse(e),
        e => e.into(),
    }
}

/// A reference's or an accuracy grade's error (`reference`, `accuracy`).
pub fn accuracy(e: crate::accuracy::Error) -> anyhow::Error {
    use crate::accuracy::Error;
    match e {
        Error::Setting(s) => flagged(s),
        Error::Data(e) => data(*e),
        Error::NotCpu { spec } => anyhow::anyhow!(
            "references are the FP32 model's outputs on the CPU: use --backend cpu (tract) or --backend ort:cpu, not '{spec}'"
        ),
        Error::CrossCheck { .. } => {
            anyhow::anyhow!("{e} (pass --no-cross-check to skip it, which the manifest records)")
        }
        e => e.into(),
    }
}

/// A training's error.
pub fn train(e: crate::train::Error) -> anyhow::Error {
    match e {
        crate::train::Error::Setting(s) => flagged(s),
        e => e.into(),
    }
}

/// A model analysis's error (`inspect`, `run --placement`), naming `--input`.
pub fn analyse(e: crate::model::AnalyseError) -> anyhow::Error {
    use crate::model::AnalyseError;
    match e {
        AnalyseError::UnknownInput { name, known } => anyhow::anyhow!(
            "--input '{name}': the model has no input of that name; its inputs are: {known}"
        ),
        AnalyseError::InputMismatch {
            name,
            given,
            declared,
        } => anyhow::anyhow!(
            "--input '{name}:{given}' contradicts the model, which declares {name} as {declared}; pass a shape that matches the declared dims"
        ),
        AnalyseError::Contradiction(m) => {
            anyhow::anyhow!("the input shapes contradict the model: {m}; check the --input shapes")
        }
        AnalyseError::InputTooLarge { ref input, .. } => {
            anyhow::anyhow!("{e}: pass --input {input}:SHAPE")
        }
        e => e.into(),
    }
}

/// A grade's error.
pub fn grade(e: crate::grade::Error) -> anyhow::Error {
    match e {
        crate::grade::Error::NoSigningKey { path } => anyhow::anyhow!(
            "--sign '{}': no such key file (make one with `acceval keygen --out NAME`)",
            path.display()
        ),
        e => e.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_library_setting_is_shown_as_its_flag() {
        let mut s = crate::load::QpsSettings::new("http://127.0.0.1:1", "m");
        s.warmup_s = -1.0;
        let lib = s.plan().unwrap_err();
        assert_eq!(lib.to_string(), "warmup_s -1: seconds in [0, 86400]");
        assert_eq!(
            flagged(lib).to_string(),
            "--warmup-s -1: seconds in [0, 86400]"
        );
        let mut l = crate::llm::LlmSettings::new("http://127.0.0.1:1", "m");
        l.warmup = 5000;
        assert_eq!(
            flagged(l.check().unwrap_err()).to_string(),
            "--warmup-requests 5000: requests in [0, 1000]"
        );
    }
}
