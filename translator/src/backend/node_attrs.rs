//! The attributes of a syntax node, where its kind has them: what the
//! twinning and pruning rules read `cfg`s from.

use syn::{Attribute, Item, Stmt};

pub fn item_attrs(item: &mut Item) -> Option<&mut Vec<Attribute>> {
    Some(match item {
        Item::Const(x) => &mut x.attrs,
        Item::Enum(x) => &mut x.attrs,
        Item::ExternCrate(x) => &mut x.attrs,
        Item::Fn(x) => &mut x.attrs,
        Item::ForeignMod(x) => &mut x.attrs,
        Item::Impl(x) => &mut x.attrs,
        Item::Macro(x) => &mut x.attrs,
        Item::Mod(x) => &mut x.attrs,
        Item::Static(x) => &mut x.attrs,
        Item::Struct(x) => &mut x.attrs,
        Item::Trait(x) => &mut x.attrs,
        Item::TraitAlias(x) => &mut x.attrs,
        Item::Type(x) => &mut x.attrs,
        Item::Union(x) => &mut x.attrs,
        Item::Use(x) => &mut x.attrs,
        _ => return None,
    })
}

pub fn stmt_attrs(stmt: &mut Stmt) -> Option<&mut Vec<Attribute>> {
    match stmt {
        Stmt::Local(l) => Some(&mut l.attrs),
        Stmt::Item(i) => item_attrs(i),
        Stmt::Macro(m) => Some(&mut m.attrs),
        Stmt::Expr(e, _) => expr_attrs(e),
    }
}

pub fn expr_attrs(expr: &mut syn::Expr) -> Option<&mut Vec<Attribute>> {
    use syn::Expr::*;
    Some(match expr {
        Block(x) => &mut x.attrs,
        Call(x) => &mut x.attrs,
        If(x) => &mut x.attrs,
        Macro(x) => &mut x.attrs,
        Match(x) => &mut x.attrs,
        MethodCall(x) => &mut x.attrs,
        Unsafe(x) => &mut x.attrs,
        Assign(x) => &mut x.attrs,
        // a gated tail expression (`#[cfg(not(feature = "cuda"))] xs.sort_last_dim(true)?`)
        Try(x) => &mut x.attrs,
        Path(x) => &mut x.attrs,
        Field(x) => &mut x.attrs,
        Tuple(x) => &mut x.attrs,
        Reference(x) => &mut x.attrs,
        Lit(x) => &mut x.attrs,
        Return(x) => &mut x.attrs,
        Unary(x) => &mut x.attrs,
        Binary(x) => &mut x.attrs,
        Cast(x) => &mut x.attrs,
        Paren(x) => &mut x.attrs,
        Struct(x) => &mut x.attrs,
        _ => return None,
    })
}

