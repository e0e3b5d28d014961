//! The pruning: what [`cfg`] says has no ROCm counterpart is removed from every
//! list of items, statements, arms, variants and fields of a file, a [`Gap`]
//! recorded for each; so is a method built on a crate without a ROCm backend
//! ([`mapping::NO_ROCM_BACKEND`]).

use quote::ToTokens;
use syn::visit_mut::VisitMut;

use super::gaps::{describe, Gap};
use super::node_attrs::{item_attrs, stmt_attrs};
use super::{cfg, mapping};

/// Removes what [`cfg`] says has no ROCm counterpart from every list of
/// items, statements, arms, variants and fields, recording a [`Gap`] each.
pub struct Pruner<'a> {
    pub file: &'a str,
    pub gaps: &'a mut Vec<Gap>,
}

impl Pruner<'_> {
    fn keep<T: ToTokens>(&mut self, node: &T, attrs: Option<&mut Vec<syn::Attribute>>) -> bool {
        let Some(attrs) = attrs else { return true };
        match cfg::apply(attrs) {
            cfg::Verdict::Keep => true,
            cfg::Verdict::Drop { feature, reason } => {
                let line = node.to_token_stream().into_iter().next().map(|t| t.span().start().line as u32).unwrap_or(0);
                self.gaps.push(Gap::new(self.file, line, &describe(node), feature, reason));
                false
            }
        }
    }

    fn prune_vec<T: ToTokens + Clone>(&mut self, list: &mut Vec<T>, attrs: fn(&mut T) -> Option<&mut Vec<syn::Attribute>>) {
        let old = std::mem::take(list);
        for mut node in old {
            let snapshot = node.clone();
            if self.keep(&snapshot, attrs(&mut node)) {
                list.push(node);
            }
        }
    }

    fn prune_punctuated<T: ToTokens + Clone, P: Default>(&mut self, list: &mut syn::punctuated::Punctuated<T, P>, attrs: fn(&mut T) -> Option<&mut Vec<syn::Attribute>>) {
        let mut v: Vec<T> = std::mem::take(list).into_iter().collect();
        self.prune_vec(&mut v, attrs);
        *list = v.into_iter().collect();
    }
}

impl VisitMut for Pruner<'_> {
    fn visit_file_mut(&mut self, f: &mut syn::File) {
        self.prune_vec(&mut f.items, item_attrs);
        syn::visit_mut::visit_file_mut(self, f);
    }
    fn visit_item_mod_mut(&mut self, m: &mut syn::ItemMod) {
        if let Some((_, items)) = &mut m.content {
            self.prune_vec(items, item_attrs);
        }
        syn::visit_mut::visit_item_mod_mut(self, m);
    }
    fn visit_item_impl_mut(&mut self, i: &mut syn::ItemImpl) {
        // a method built on a crate without a ROCm backend (`compile` through `ug_rocm`) goes
        let file = self.file;
        let gaps = &mut *self.gaps;
        i.items.retain(|item| {
            let Some((_, feature, reason)) = mapping::NO_ROCM_BACKEND.iter().find(|(name, _, _)| names_ident(item.to_token_stream(), name)) else { return true };
            let line = item.to_token_stream().into_iter().next().map(|t| t.span().start().line as u32).unwrap_or(0);
            gaps.push(Gap::new(file, line, &describe(item), feature, reason));
            false
        });
        self.prune_vec(&mut i.items, |n| match n {
            syn::ImplItem::Const(x) => Some(&mut x.attrs),
            syn::ImplItem::Fn(x) => Some(&mut x.attrs),
            syn::ImplItem::Type(x) => Some(&mut x.attrs),
            syn::ImplItem::Macro(x) => Some(&mut x.attrs),
            _ => None,
        });
        syn::visit_mut::visit_item_impl_mut(self, i);
    }
    fn visit_item_trait_mut(&mut self, t: &mut syn::ItemTrait) {
        self.prune_vec(&mut t.items, |n| match n {
            syn::TraitItem::Const(x) => Some(&mut x.attrs),
            syn::TraitItem::Fn(x) => Some(&mut x.attrs),
            syn::TraitItem::Type(x) => Some(&mut x.attrs),
            syn::TraitItem::Macro(x) => Some(&mut x.attrs),
            _ => None,
        });
        syn::visit_mut::visit_item_trait_mut(self, t);
    }
    fn visit_item_foreign_mod_mut(&mut self, m: &mut syn::ItemForeignMod) {
        self.prune_vec(&mut m.items, |n| match n {
            syn::ForeignItem::Fn(x) => Some(&mut x.attrs),
            syn::ForeignItem::Static(x) => Some(&mut x.attrs),
            syn::ForeignItem::Type(x) => Some(&mut x.attrs),
            syn::ForeignItem::Macro(x) => Some(&mut x.attrs),
            _ => None,
        });
        syn::visit_mut::visit_item_foreign_mod_mut(self, m);
    }
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        self.prune_vec(&mut b.stmts, stmt_attrs);
        syn::visit_mut::visit_block_mut(self, b);
    }
    fn visit_expr_match_mut(&mut self, m: &mut syn::ExprMatch) {
        self.prune_vec(&mut m.arms, |a| Some(&mut a.attrs));
        syn::visit_mut::visit_expr_match_mut(self, m);
    }
    fn visit_item_enum_mut(&mut self, e: &mut syn::ItemEnum) {
        self.prune_punctuated(&mut e.variants, |v| Some(&mut v.attrs));
        syn::visit_mut::visit_item_enum_mut(self, e);
    }
    fn visit_fields_named_mut(&mut self, f: &mut syn::FieldsNamed) {
        self.prune_punctuated(&mut f.named, |x| Some(&mut x.attrs));
        syn::visit_mut::visit_fields_named_mut(self, f);
    }
    fn visit_expr_struct_mut(&mut self, s: &mut syn::ExprStruct) {
        self.prune_punctuated(&mut s.fields, |x| Some(&mut x.attrs));
        syn::visit_mut::visit_expr_struct_mut(self, s);
    }
}

/// Does `tokens` contain the identifier `name`?
fn names_ident(tokens: proc_macro2::TokenStream, name: &str) -> bool {
    tokens.into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(id) => id == name,
        proc_macro2::TokenTree::Group(g) => names_ident(g.stream(), name),
        _ => false,
    })
}

