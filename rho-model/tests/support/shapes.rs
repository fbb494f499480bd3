//! Generated argument schemas, and values each accepts: a schema's shape
//! is drawn first, and both its JSON Schema and its values are made from it.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// A schema's shape, from which both the JSON Schema and values it accepts
/// are made.
#[derive(Debug, Clone)]
pub(crate) enum Shape {
    Text {
        min_length: Option<u8>,
    },
    Integer {
        minimum: Option<i8>,
    },
    Boolean,
    Null,
    Choice(Vec<&'static str>),
    /// `type: [inner, "null"]`.
    OrNull(Box<Shape>),
    List(Box<Shape>),
    Object {
        fields: Vec<Field>,
        closed: bool,
    },
    /// `oneOf` of branches of distinct types (string, integer, boolean).
    OneOf {
        with_integer: bool,
        with_boolean: bool,
    },
    /// A `$ref` to a definition holding the shape.
    Ref(Box<Shape>),
}

#[derive(Debug, Clone)]
pub(crate) struct Field {
    pub(crate) name: &'static str,
    pub(crate) shape: Shape,
    pub(crate) required: bool,
}

const NAMES: &[&str] = &["path", "limit", "mode", "tags", "depth", "note"];

pub(crate) fn shape() -> impl Strategy<Value = Shape> + Clone {
    let leaf = prop_oneof![
        proptest::option::of(0u8..4).prop_map(|min_length| Shape::Text { min_length }),
        proptest::option::of(-5i8..5).prop_map(|minimum| Shape::Integer { minimum }),
        Just(Shape::Boolean),
        Just(Shape::Null),
        Just(Shape::Choice(vec!["a", "b"])),
        (any::<bool>(), any::<bool>()).prop_map(|(with_integer, with_boolean)| Shape::OneOf {
            with_integer,
            with_boolean
        }),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            inner
                .clone()
                .prop_map(|shape| Shape::OrNull(Box::new(shape))),
            inner.clone().prop_map(|shape| Shape::List(Box::new(shape))),
            inner.clone().prop_map(|shape| Shape::Ref(Box::new(shape))),
            object(inner),
        ]
    })
}

pub(crate) fn object(inner: impl Strategy<Value = Shape> + Clone) -> impl Strategy<Value = Shape> {
    (
        proptest::collection::vec((inner, any::<bool>()), 0..4),
        any::<bool>(),
    )
        .prop_map(|(fields, closed)| Shape::Object {
            fields: fields
                .into_iter()
                .zip(NAMES)
                .map(|((shape, required), name)| Field {
                    name,
                    shape,
                    required,
                })
                .collect(),
            closed,
        })
}

/// The JSON Schema of `shape`, its definitions gathered in `defs`.
pub(crate) fn schema(shape: &Shape, defs: &mut Map<String, Value>) -> Value {
    match shape {
        Shape::Text { min_length } => match min_length {
            Some(min) => json!({ "type": "string", "minLength": min }),
            None => json!({ "type": "string" }),
        },
        Shape::Integer { minimum } => match minimum {
            Some(min) => json!({ "type": "integer", "minimum": min }),
            None => json!({ "type": "integer" }),
        },
        Shape::Boolean => json!({ "type": "boolean" }),
        Shape::Null => json!({ "type": "null" }),
        Shape::Choice(values) => json!({ "enum": values }),
        Shape::OrNull(inner) => {
            let mut inner = schema(inner, defs);
            match inner.get("type").cloned() {
                Some(Value::String(kind)) if kind != "null" => {
                    inner["type"] = json!([kind, "null"]);
                    inner
                }
                _ => json!({ "anyOf": [inner, { "type": "null" }] }),
            }
        }
        Shape::List(inner) => json!({ "type": "array", "items": schema(inner, defs) }),
        Shape::Object { fields, closed } => {
            let mut properties = Map::new();
            let mut required = Vec::new();
            for field in fields {
                properties.insert(field.name.into(), schema(&field.shape, defs));
                if field.required {
                    required.push(json!(field.name));
                }
            }
            let mut object =
                json!({ "type": "object", "properties": properties, "required": required });
            if *closed {
                object["additionalProperties"] = false.into();
            }
            object
        }
        Shape::OneOf {
            with_integer,
            with_boolean,
        } => {
            let mut branches = vec![json!({ "type": "string" })];
            if *with_integer {
                branches.push(json!({ "type": "integer" }));
            }
            if *with_boolean {
                branches.push(json!({ "type": "boolean" }));
            }
            json!({ "oneOf": branches })
        }
        Shape::Ref(inner) => {
            let name = format!("d{}", defs.len());
            defs.insert(name.clone(), Value::Null);
            let target = schema(inner, defs);
            defs.insert(name.clone(), target);
            json!({ "$ref": format!("#/$defs/{name}") })
        }
    }
}

/// Values `shape` accepts.
pub(crate) fn value(shape: &Shape) -> BoxedStrategy<Value> {
    match shape {
        Shape::Text { min_length } => {
            let min = min_length.unwrap_or(0) as usize;
            proptest::collection::vec(proptest::char::range('a', 'e'), min..min + 4)
                .prop_map(|chars| Value::String(chars.into_iter().collect()))
                .boxed()
        }
        Shape::Integer { minimum } => {
            let min = minimum.map_or(-100, i64::from);
            (min..min + 100).prop_map(Value::from).boxed()
        }
        Shape::Boolean => any::<bool>().prop_map(Value::from).boxed(),
        Shape::Null => Just(Value::Null).boxed(),
        Shape::Choice(values) => proptest::sample::select(values.clone())
            .prop_map(Value::from)
            .boxed(),
        Shape::OrNull(inner) => prop_oneof![Just(Value::Null), value(inner)].boxed(),
        Shape::List(inner) => proptest::collection::vec(value(inner), 0..3)
            .prop_map(Value::Array)
            .boxed(),
        Shape::Ref(inner) => value(inner),
        Shape::OneOf {
            with_integer,
            with_boolean,
        } => {
            let mut options = vec!["[a-z]{0,3}".prop_map(Value::from).boxed()];
            if *with_integer {
                options.push(any::<i32>().prop_map(Value::from).boxed());
            }
            if *with_boolean {
                options.push(any::<bool>().prop_map(Value::from).boxed());
            }
            proptest::strategy::Union::new(options).boxed()
        }
        Shape::Object { fields, .. } => {
            let fields: Vec<BoxedStrategy<Option<(String, Value)>>> = fields
                .iter()
                .map(|field| {
                    let name = field.name.to_owned();
                    let present =
                        value(&field.shape).prop_map(move |value| Some((name.clone(), value)));
                    if field.required {
                        present.boxed()
                    } else {
                        prop_oneof![Just(None), present].boxed()
                    }
                })
                .collect();
            fields
                .prop_map(|fields| Value::Object(fields.into_iter().flatten().collect()))
                .boxed()
        }
    }
}

/// A tool's root: an object of some fields.
pub(crate) fn root() -> impl Strategy<Value = (Value, Value)> {
    object(shape()).prop_flat_map(|shape| {
        let mut defs = Map::new();
        let mut root = schema(&shape, &mut defs);
        if !defs.is_empty() {
            root["$defs"] = Value::Object(defs);
        }
        (Just(root), value(&shape))
    })
}
