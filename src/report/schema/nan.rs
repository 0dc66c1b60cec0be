//! Numbers that may be NaN (an error metric of a non-finite output, a power average over
//! no time): serde_json writes NaN as `null`, so these fields read `null` back as NaN and
//! their JSON schema allows `null`. Use with
//! `#[serde(deserialize_with = "nan::f64")] #[schemars(with = "Option<f64>")]`.

use serde::{Deserialize, Deserializer};

/// A number, `null` read as NaN.
pub fn f64<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// A list of numbers, each `null` read as NaN.
pub fn vec<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    Ok(Vec::<Option<f64>>::deserialize(d)?
        .into_iter()
        .map(|v| v.unwrap_or(f64::NAN))
        .collect())
}

/// Rows of numbers, each `null` read as NaN.
pub fn rows<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<f64>>, D::Error> {
    Ok(Vec::<Vec<Option<f64>>>::deserialize(d)?
        .into_iter()
        .map(|r| r.into_iter().map(|v| v.unwrap_or(f64::NAN)).collect())
        .collect())
}

#[cfg(test)]
mod tests {
    #[derive(serde::Serialize, serde::Deserialize)]
    struct X {
        #[serde(deserialize_with = "super::f64")]
        a: f64,
        #[serde(deserialize_with = "super::vec")]
        b: Vec<f64>,
    }

    #[test]
    fn nan_round_trips_through_null() {
        let s = serde_json::to_string(&X {
            a: f64::NAN,
            b: vec![1.0, f64::NAN],
        })
        .unwrap();
        assert_eq!(s, r#"{"a":null,"b":[1.0,null]}"#);
        let x: X = serde_json::from_str(&s).unwrap();
        assert!(x.a.is_nan() && x.b[0] == 1.0 && x.b[1].is_nan());
    }
}
