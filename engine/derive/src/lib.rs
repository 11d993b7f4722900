//! `#[derive(Component)]`: gives a Rust type an ecsdb component schema.
//!
//! - A struct with named fields of schema types (`bool`, integers, `f32`, `f64`, `String`,
//!   `Entity`, `[f32; 2]`, `[f32; 3]`) gets a schema: each field's name, type and byte offset.
//! - A unit struct is a tag.
//! - `#[component(opaque)]` (required when a field has another type) makes the type storable
//!   and queryable by presence, without a schema.
//! - `#[component(storage = "sparse")]` selects sparse-set storage.
//! - `#[component(name = "Other")]` sets the catalog name (default: the type's name).
//! - `#[references]` on an `Entity` field declares it a reference (`ON DELETE NO ACTION`);
//!   `#[references(on_delete = "cascade", acyclic)]` with a policy (`"no action"`,
//!   `"cascade"`, `"set null"`, `"remove"`, `"restrict"`) and `ACYCLIC`. The world declares
//!   it the first time it spawns or inserts the type.
#![forbid(unsafe_code)]

use proc_macro::TokenStream;
use quote::quote;
use syn::{Data, DeriveInput, Fields, LitStr, parse_macro_input};

/// Derives `ecsdb_engine::Component`. See the crate docs for the attributes.
#[proc_macro_derive(Component, attributes(component, references))]
pub fn derive_component(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// The path of the engine crate as the caller sees it: `::ecsdb_engine` when it depends on the
/// engine (or is the engine, which aliases itself), `::ecsdb::engine` through the facade.
fn engine_path() -> proc_macro2::TokenStream {
    use proc_macro_crate::{FoundCrate, crate_name};
    match crate_name("ecsdb-engine") {
        Ok(FoundCrate::Itself) => quote!(::ecsdb_engine),
        Ok(FoundCrate::Name(name)) => {
            let ident = syn::Ident::new(&name, proc_macro2::Span::call_site());
            quote!(::#ident)
        }
        Err(_) => match crate_name("ecsdb") {
            Ok(FoundCrate::Name(name)) => {
                let ident = syn::Ident::new(&name, proc_macro2::Span::call_site());
                quote!(::#ident::engine)
            }
            _ => quote!(::ecsdb::engine),
        },
    }
}

fn expand(input: &DeriveInput) -> syn::Result<proc_macro2::TokenStream> {
    let krate = engine_path();
    let mut opaque = false;
    let mut sparse = false;
    let mut name = input.ident.to_string();
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("component")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("opaque") {
                opaque = true;
                Ok(())
            } else if meta.path.is_ident("storage") {
                let v: LitStr = meta.value()?.parse()?;
                match v.value().as_str() {
                    "sparse" => sparse = true,
                    "table" => sparse = false,
                    other => return Err(meta.error(format!("unknown storage '{other}': use \"table\" or \"sparse\""))),
                }
                Ok(())
            } else if meta.path.is_ident("name") {
                let v: LitStr = meta.value()?.parse()?;
                name = v.value();
                Ok(())
            } else {
                Err(meta.error("expected `opaque`, `storage = \"table\"|\"sparse\"` or `name = \"...\"`"))
            }
        })?;
    }
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let fields = if opaque {
        Vec::new()
    } else {
        match &input.data {
            Data::Struct(s) => match &s.fields {
                Fields::Named(named) => named
                    .named
                    .iter()
                    .map(|f| {
                        let fname = f.ident.as_ref().expect("named field");
                        let fty = &f.ty;
                        let sname = fname.to_string();
                        quote! {
                            #krate::FieldInfo {
                                name: ::std::string::String::from(#sname),
                                ty: <#fty as #krate::SchemaField>::FIELD_TYPE,
                                offset: #krate::__private::offset_of!(#ident #ty_generics, #fname),
                            }
                        }
                    })
                    .collect(),
                Fields::Unit => Vec::new(),
                Fields::Unnamed(_) => {
                    return Err(syn::Error::new_spanned(
                        ident,
                        "tuple structs have no field names for a schema: use named fields, or #[component(opaque)]",
                    ));
                }
            },
            _ => {
                return Err(syn::Error::new_spanned(
                    ident,
                    "only structs get a schema: mark enums and unions #[component(opaque)]",
                ));
            }
        }
    };
    let references = if opaque { Vec::new() } else { field_references(&input.data, &krate)? };
    let references = if references.is_empty() {
        quote!()
    } else {
        quote!(const REFERENCES: &'static [#krate::TypedReference] = &[#(#references),*];)
    };
    let storage = if sparse { quote!(#krate::StorageKind::Sparse) } else { quote!(#krate::StorageKind::Table) };
    Ok(quote! {
        // SAFETY: the schema lists the type's own named fields, each with the schema type of
        // its declared Rust type (`SchemaField`, sealed) and its `offset_of!` offset.
        unsafe impl #impl_generics #krate::Component for #ident #ty_generics #where_clause {
            const STORAGE: #krate::StorageKind = #storage;
            #references
            fn schema() -> #krate::ComponentSchema {
                #krate::ComponentSchema {
                    name: #name,
                    fields: ::std::vec![#(#fields),*],
                    opaque: #opaque,
                }
            }
        }
    })
}

/// The `#[references(...)]` declarations on a struct's named fields.
fn field_references(data: &Data, krate: &proc_macro2::TokenStream) -> syn::Result<Vec<proc_macro2::TokenStream>> {
    let Data::Struct(s) = data else { return Ok(Vec::new()) };
    let Fields::Named(named) = &s.fields else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for f in &named.named {
        for attr in f.attrs.iter().filter(|a| a.path().is_ident("references")) {
            let mut on_delete = quote!(NoAction);
            let mut acyclic = false;
            if !matches!(attr.meta, syn::Meta::Path(_)) {
                attr.parse_nested_meta(|meta| {
                    if meta.path.is_ident("acyclic") {
                        acyclic = true;
                        Ok(())
                    } else if meta.path.is_ident("on_delete") {
                        let v: LitStr = meta.value()?.parse()?;
                        on_delete = match v.value().to_ascii_lowercase().replace('_', " ").as_str() {
                            "no action" => quote!(NoAction),
                            "cascade" => quote!(Cascade),
                            "set null" => quote!(SetNull),
                            "remove" => quote!(Remove),
                            "restrict" => quote!(Restrict),
                            other => {
                                return Err(meta.error(format!(
                                    "unknown ON DELETE policy '{other}': use \"no action\", \"cascade\", \"set null\", \"remove\" or \"restrict\""
                                )))
                            }
                        };
                        Ok(())
                    } else {
                        Err(meta.error("expected `on_delete = \"...\"` or `acyclic`"))
                    }
                })?;
            }
            let name = f.ident.as_ref().expect("named field").to_string();
            out.push(quote! {
                #krate::TypedReference { field: #name, on_delete: #krate::OnDelete::#on_delete, acyclic: #acyclic }
            });
        }
    }
    Ok(out)
}
