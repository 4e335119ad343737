//! A tool's arguments, read so that arguments that do not fit are the tool's JSON error
//! `{"error":{"code":"bad_argument","message"}}` like every other (rmcp's own `Parameters`
//! answers them as plain text), naming the tool and, for an unknown argument, the allowed
//! ones (every argument struct denies unknown fields). Named `Parameters` because the
//! `#[tool]` macro takes the input schema from the argument of that name.

use rmcp::ErrorData;
use rmcp::handler::server::common::FromContextPart;
use rmcp::handler::server::tool::ToolCallContext;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::shape::{self, Failure};

/// The arguments, or the tool's error text when they do not fit its schema.
pub struct Parameters<T>(pub Result<T, String>);

impl<T: JsonSchema> JsonSchema for Parameters<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}

impl<S, T: DeserializeOwned> FromContextPart<ToolCallContext<'_, S>> for Parameters<T> {
    fn from_context_part(context: &mut ToolCallContext<S>) -> Result<Self, ErrorData> {
        let arguments = context.arguments.take().unwrap_or_default();
        let parsed = serde_json::from_value(Value::Object(arguments)).map_err(|e| {
            let message = format!("the arguments of {} do not fit its schema: {e}", context.name);
            Failure::bad(message).to_json().to_string()
        });
        Ok(Self(parsed))
    }
}

/// A turn: its number, or the ref the agent gave it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum TurnArg {
    Number(i64),
    Ref(String),
}

impl TurnArg {
    pub fn segment(&self) -> String {
        match self {
            Self::Number(n) => n.to_string(),
            Self::Ref(r) => shape::segment(r),
        }
    }
}
