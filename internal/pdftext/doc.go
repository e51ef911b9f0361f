// Package pdftext reads the text of PDF files page by page, with PDFium compiled to
// WebAssembly and run by wazero (no system library, no cgo), under caps per document:
// its time, the memory PDFium may use, its pages and the size of its text.
package pdftext
