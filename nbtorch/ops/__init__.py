"""Op definitions: argument checks, output shape and dtype, dispatch, backward formula."""
