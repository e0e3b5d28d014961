//! Rule `unmirrorable-features`: in ROCm code, upstream features with no ROCm
//! twin (cuDNN, cuTile, NCCL: [`UNMIRRORABLE_FEATURES`]) are off. A node
//! under `cfg(feature = "cudnn")` is left out (and listed as a gap), a
//! `cfg(not(feature = "cudnn"))` that thereby always holds is removed, and
//! mixed predicates are simplified (`all(feature = "rocm", not(feature =
//! "cudnn"))` → `feature = "rocm"`).

use proc_macro2::TokenStream;
use quote::quote;
use syn::punctuated::Punctuated;
use syn::parse::Parser;
use syn::{Attribute, Expr, ExprLit, Lit, Meta, Token};

use super::mapping::UNMIRRORABLE_FEATURES;

/// A `cfg` predicate after unmirrorable features are set to off.
#[derive(Debug, Clone)]
pub enum CfgValue {
    /// Always true: the attribute can go.
    True,
    /// Always false, because of this feature: the node goes.
    False(&'static str),
    /// Depends on other features: the simplified predicate.
    Open(TokenStream),
}

/// What to do with a node given its attributes.
#[derive(Debug)]
pub enum Verdict {
    Keep,
    /// Left out; the feature that is off and why it has no twin.
    Drop { feature: &'static str, reason: &'static str },
}

/// Simplifies the `cfg` attributes in `attrs` and says whether the node stays.
pub fn apply(attrs: &mut Vec<Attribute>) -> Verdict {
    let mut verdict = Verdict::Keep;
    let mut kept = Vec::with_capacity(attrs.len());
    for attr in attrs.drain(..) {
        if !attr.path().is_ident("cfg") {
            kept.push(attr);
            continue;
        }
        let Ok(pred) = attr.parse_args::<Meta>() else {
            kept.push(attr);
            continue;
        };
        match evaluate(&pred) {
            CfgValue::True => {}
            CfgValue::False(feature) => {
                let reason = UNMIRRORABLE_FEATURES.iter().find(|(f, _)| *f == feature).map(|(_, r)| *r).unwrap_or("");
                verdict = Verdict::Drop { feature, reason };
                kept.push(attr);
            }
            CfgValue::Open(tokens) => {
                let mut attr = attr;
                attr.meta = syn::parse_quote!(cfg(#tokens));
                kept.push(attr);
            }
        }
    }
    *attrs = kept;
    verdict
}

/// Evaluates a `cfg` predicate with the unmirrorable features off.
pub fn evaluate(pred: &Meta) -> CfgValue {
    match pred {
        Meta::NameValue(nv) if nv.path.is_ident("feature") => {
            if let Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) = &nv.value {
                let name = s.value();
                if let Some((feature, _)) = UNMIRRORABLE_FEATURES.iter().find(|(f, _)| *f == name) {
                    return CfgValue::False(feature);
                }
            }
            CfgValue::Open(quote!(#pred))
        }
        Meta::List(list) if list.path.is_ident("not") => match list.parse_args::<Meta>() {
            Ok(inner) => match evaluate(&inner) {
                CfgValue::True => CfgValue::False("(a predicate that always holds)"),
                CfgValue::False(_) => CfgValue::True,
                CfgValue::Open(t) => CfgValue::Open(quote!(not(#t))),
            },
            Err(_) => CfgValue::Open(quote!(#pred)),
        },
        Meta::List(list) if list.path.is_ident("all") || list.path.is_ident("any") => {
            let is_all = list.path.is_ident("all");
            let Ok(parts) = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(list.tokens.clone()) else {
                return CfgValue::Open(quote!(#pred));
            };
            let mut open = Vec::new();
            for part in &parts {
                match evaluate(part) {
                    CfgValue::True if !is_all => return CfgValue::True,
                    CfgValue::False(f) if is_all => return CfgValue::False(f),
                    CfgValue::True | CfgValue::False(_) => {}
                    CfgValue::Open(t) => open.push(t),
                }
            }
            match open.len() {
                0 if is_all => CfgValue::True,
                0 => CfgValue::False("(no alternative left)"),
                1 => CfgValue::Open(open.pop().expect("one")),
                _ if is_all => CfgValue::Open(quote!(all(#(#open),*))),
                _ => CfgValue::Open(quote!(any(#(#open),*))),
            }
        }
        other => CfgValue::Open(quote!(#other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(attr: &str) -> (String, bool) {
        let item: syn::ItemFn = syn::parse_str(&format!("{attr} fn f() {{}}")).unwrap();
        let mut attrs = item.attrs;
        let dropped = matches!(apply(&mut attrs), Verdict::Drop { .. });
        (attrs.iter().map(|a| quote!(#a).to_string()).collect::<Vec<_>>().join(" "), dropped)
    }

    #[test]
    fn unmirrorable_feature_drops_the_node() {
        assert!(run("#[cfg(feature = \"cudnn\")]").1);
        assert!(run("#[cfg(all(feature = \"rocm\", feature = \"cutile\"))]").1);
    }

    #[test]
    fn negated_unmirrorable_feature_always_holds() {
        assert_eq!(run("#[cfg(not(feature = \"cudnn\"))]"), (String::new(), false));
    }

    #[test]
    fn mixed_predicates_are_simplified() {
        let (attrs, dropped) = run("#[cfg(all(feature = \"rocm\", not(feature = \"cutile\")))]");
        assert!(!dropped);
        assert_eq!(attrs, "# [cfg (feature = \"rocm\")]");
        let (attrs, _) = run("#[cfg(any(feature = \"cudnn\", feature = \"metal\", test))]");
        assert_eq!(attrs, "# [cfg (any (feature = \"metal\" , test))]");
    }

    #[test]
    fn other_attributes_are_untouched() {
        let (attrs, dropped) = run("#[inline] #[cfg(feature = \"metal\")]");
        assert!(!dropped);
        assert_eq!(attrs, "# [inline] # [cfg (feature = \"metal\")]");
    }
}
