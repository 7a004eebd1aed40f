"""One module per resource.  Each responder is thin: policy -> validate ->
call the compute facade -> serialize with a view.  (Where Nova validates a
body before loading the server, so do we: a bad body is a 400 even for a
server the caller cannot see.)"""
