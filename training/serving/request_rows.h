// CountRequestRows: the rows of a serving request body, counted without parsing it
// into a document. CAF-free.
#ifndef ACTORFLOW_TRAINING_SERVING_REQUEST_ROWS_H_
#define ACTORFLOW_TRAINING_SERVING_REQUEST_ROWS_H_

#include <cstdint>
#include <string_view>

namespace actorflow {

// The rows a :predict, :classify or :regress body asks for, counted without building
// its document (a SAX pass that allocates nothing per value): the elements of
// "instances", of "examples", of "inputs" when it is a list, or the most elements
// of any of its keys' lists when it is an object. -1 when the body is not valid JSON
// (ParseJsonText then says where). A server refuses a body over its row limit
// before parsing it: a request's memory (the parsed document, the model's
// activations, the response) grows with its rows, not with its bytes.
int64_t CountRequestRows(std::string_view body);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_SERVING_REQUEST_ROWS_H_
