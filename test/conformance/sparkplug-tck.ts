/**
 * The edge node profile of the Eclipse Sparkplug TCK (tck/src/main/java/
 * org/eclipse/sparkplug/tck/test/edge/*.java, the ids each test lists), one
 * row per assertion id: what the specification says (its
 * `[tck-testable tck-id-...]` statement), and whether this controller's
 * sparkplug notifier passes it here (sparkplug-tck.test.ts), whether it does
 * not apply (why), or is not yet done (why). SPARKPLUG-TCK.md is this list
 * as a table:
 *
 *   node dist/test/conformance/sparkplug-tck.js           prints it
 *   node dist/test/conformance/sparkplug-tck.js --write   writes it into SPARKPLUG-TCK.md (after TCK_MARK)
 *
 * sparkplug-tck.test.ts fails when the ids it tests are not those this list
 * says pass, or when the file is stale.
 */
import fs from 'node:fs';
import path from 'node:path';
import { cell } from '../compat/table';

export type TckVerdict = 'passes' | 'does not apply' | 'not yet done';

export interface TckRow {
  id: string;
  /** the TCK's edge test that lists the id (the first, when several do) */
  test: string;
  verdict: TckVerdict;
  /** the specification's statement */
  says: string;
  /** why it does not apply, or what is missing */
  why?: string;
}

export const EDGE_PROFILE: readonly TckRow[] = [
  { id: "operational-behavior-primary-application-state-with-multiple-servers-single-server", test: "MultipleBrokerTest", verdict: 'passes', says: "The Edge Nodes MUST not connected to more than one server at any point in time." },
  { id: "operational-behavior-primary-application-state-with-multiple-servers-state-subs", test: "MultipleBrokerTest", verdict: 'passes', says: "When using multiple MQTT Servers and Edge Nodes are configured with a Primary Host Application, the Primary Host Application instance MUST be configured to publish a STATE Birth Certificate and all Edge Nodes configured with a Primary Host Application MUST subscribe to this STATE message." },
  { id: "operational-behavior-primary-application-state-with-multiple-servers-walk", test: "MultipleBrokerTest", verdict: 'passes', says: "If the Primary Host Application is offline as denoted via the STATE MQTT Message, the Edge Node MUST terminate its session with this MQTT Server and move to the next available MQTT Server that is available." },
  { id: "operational-behavior-edge-node-birth-sequence-wait", test: "MultipleBrokerTest", verdict: 'passes', says: "The Edge Node MUST also wait to publish its BIRTH sequence until an online=true STATE message is received by the Edge Node." },
  { id: "message-flow-edge-node-birth-publish-phid-wait", test: "PrimaryHostTest", verdict: 'passes', says: "If the Edge Node is configured to wait for a Primary Host Application it MUST verify the Primary Host Application is online via the STATE topic before publishing NBIRTH and DBIRTH messages." },
  { id: "message-flow-edge-node-birth-publish-phid-wait-id", test: "PrimaryHostTest", verdict: 'passes', says: "If the Edge Node is configured to wait for a Primary Host Application it MUST validate the Host Application ID as the last token in the STATE message topic string matches the configured Primary Host Application ID for this Edge Node." },
  { id: "message-flow-edge-node-birth-publish-phid-wait-online", test: "PrimaryHostTest", verdict: 'passes', says: "If the Edge Node is configured to wait for a Primary Host Application it MUST validate the 'online' boolean flag is true in the STATE message payload before considering the Primary Host Application to be online and active." },
  { id: "message-flow-edge-node-birth-publish-phid-wait-timestamp", test: "PrimaryHostTest", verdict: 'passes', says: "If the Edge Node is configured to wait for a Primary Host Application it MUST validate the timestamp value is greater than or equal to the previous STATE message timestamp value in the STATE message payload before considering the Primary Host Application to be online and active. If no previous STATE message timestamp value has been received by this Edge Node it MUST consider the incoming STATE message to be the latest/valid." },
  { id: "message-flow-edge-node-birth-publish-phid-offline", test: "PrimaryHostTest", verdict: 'passes', says: "If the Edge Node is configured to wait for a Primary Host Application, it is connected to the MQTT Server, and receives a STATE message on its configured Primary Host, the timestamp value in the payload is greater than or equal to the timestamp value included in the prior 'online' STATE message, and the 'online' value is false, it MUST immediately publish an NDEATH message and disconnect from the MQTT Server and start the connection establishment process over." },
  { id: "operational-behavior-edge-node-termination-host-offline", test: "PrimaryHostTest", verdict: 'passes', says: "If the Edge Node is configured to use a Primary Host Application, it MUST disconnect from the current MQTT Server if the online JSON value is false and the timestamp value is greater than or equal to the previous online STATE message timestamp value." },
  { id: "operational-behavior-edge-node-termination-host-offline-reconnect", test: "PrimaryHostTest", verdict: 'passes', says: "If the Edge Node disconnects after being in a Sparkplug session due to a valid 'offline STATE message', it MUST attempt to connect to the next MQTT Server in its connection list to start the session establishment procedure over again." },
  { id: "operational-behavior-edge-node-termination-host-offline-timestamp", test: "PrimaryHostTest", verdict: 'passes', says: "Consider an Edge Node that is configured to use a Primary Host Application and the Edge Node is connected and publishing. Then it receives an offline STATE message. It MUST NOT disconnect if the timestamp value is less than the value from the previous online STATE message." },
  { id: "operational-behavior-data-commands-rebirth-action-1", test: "ReceiveCommandTest", verdict: 'passes', says: "When an Edge Node receives a Rebirth Request, it MUST immediately stop sending DATA messages." },
  { id: "operational-behavior-data-commands-rebirth-action-2", test: "ReceiveCommandTest", verdict: 'passes', says: "After an Edge Node stops sending DATA messages, it MUST send a complete BIRTH sequence including the NBIRTH and DBIRTH(s) if applicable." },
  { id: "operational-behavior-data-commands-rebirth-action-3", test: "ReceiveCommandTest", verdict: 'passes', says: "The NBIRTH MUST include the same bdSeq metric with the same value it had included in the Will Message of the previous MQTT CONNECT packet." },
  { id: "payloads-ndeath-will-message", test: "ReceiveCommandTest", verdict: 'passes', says: "An NDEATH message MUST be registered as a Will Message in the MQTT CONNECT packet." },
  { id: "payloads-sequence-num-always-included", test: "SendComplexDataTest", verdict: 'passes', says: "A sequence number MUST be included in the payload of every Sparkplug MQTT message from an Edge Node except NDEATH messages." },
  { id: "payloads-metric-datatype-value-type", test: "SendComplexDataTest", verdict: 'passes', says: "The datatype MUST be an unsigned 32-bit integer representing the datatype." },
  { id: "payloads-metric-datatype-value", test: "SendComplexDataTest", verdict: 'passes', says: "The datatype MUST be one of the enumerated values as shown in the valid Sparkplug Data Types."  },
  { id: "payloads-propertyset-keys-array-size", test: "SendComplexDataTest", verdict: 'does not apply', says: "The array of keys in a PropertySet MUST contain the same number of values included in the array of PropertyValue objects.", why: "the node sends no PropertySet: no metric carries properties" },
  { id: "payloads-propertyset-values-array-size", test: "SendComplexDataTest", verdict: 'does not apply', says: "The array of values in a PropertySet MUST contain the same number of items that are in the keys array.", why: "the node sends no PropertySet: no metric carries properties" },
  { id: "payloads-metric-propertyvalue-type-type", test: "SendComplexDataTest", verdict: 'does not apply', says: "This MUST be an unsigned 32-bit integer representing the datatype.", why: "the node sends no PropertySet: no metric carries properties" },
  { id: "payloads-metric-propertyvalue-type-value", test: "SendComplexDataTest", verdict: 'does not apply', says: "This value MUST be one of the enumerated values as shown in the valid Sparkplug Data Types." , why: "the node sends no PropertySet: no metric carries properties" },
  { id: "payloads-metric-propertyvalue-type-req", test: "SendComplexDataTest", verdict: 'does not apply', says: "This MUST be included in Property Value Definitions in NBIRTH and DBIRTH messages.", why: "the node sends no PropertySet: no metric carries properties" },
  { id: "payloads-propertyset-quality-value-type", test: "SendComplexDataTest", verdict: 'does not apply', says: "The 'type' of the Property Value MUST be a value of 3 which represents a Signed 32-bit Integer.", why: "the node sends no PropertySet: no metric carries properties" },
  { id: "payloads-propertyset-quality-value-value", test: "SendComplexDataTest", verdict: 'does not apply', says: "The 'value' of the Property Value MUST be an int_value and be one of the valid quality codes of 0, 192, or 500.", why: "the node sends no PropertySet: no metric carries properties" },
  { id: "payloads-alias-data-cmd-requirement", test: "SendComplexDataTest", verdict: 'passes', says: "NDATA, DDATA, NCMD, and DCMD messages MUST only include an alias and the metric name MUST be excluded." },
  { id: "payloads-metric-datatype-not-req", test: "SendComplexDataTest", verdict: 'passes', says: "The datatype SHOULD NOT be included with metric definitions in NDATA, NCMD, DDATA, and DCMD messages." },
  { id: "payloads-name-birth-data-requirement", test: "SendComplexDataTest", verdict: 'passes', says: "The timestamp MUST be included with every metric in all NBIRTH, DBIRTH, NDATA, and DDATA messages." },
  { id: "payloads-name-requirement", test: "SendComplexDataTest", verdict: 'passes', says: "The name MUST be included with every metric unless aliases are being used." },
  { id: "payloads-dataset-column-size", test: "SendComplexDataTest", verdict: 'does not apply', says: "This MUST be an unsigned 64-bit integer representing the number of columns in this DataSet.", why: "the node sends no DataSet metrics" },
  { id: "payloads-dataset-column-num-headers", test: "SendComplexDataTest", verdict: 'does not apply', says: "The size of the array MUST have the same number of elements that the types array contains.", why: "the node sends no DataSet metrics" },
  { id: "payloads-dataset-types-def", test: "SendComplexDataTest", verdict: 'does not apply', says: "This MUST be an array of unsigned 32 bit integers representing the datatypes of the columns.", why: "the node sends no DataSet metrics" },
  { id: "payloads-dataset-types-type", test: "SendComplexDataTest", verdict: 'does not apply', says: "The values in the types array MUST be a unsigned 32-bit integer representing the datatype.", why: "the node sends no DataSet metrics" },
  { id: "payloads-dataset-types-value", test: "SendComplexDataTest", verdict: 'does not apply', says: "This values in the types array MUST be one of the enumerated values as shown in the valid Sparkplug Data Types." , why: "the node sends no DataSet metrics" },
  { id: "payloads-dataset-types-num", test: "SendComplexDataTest", verdict: 'does not apply', says: "The array of types MUST have the same number of elements that the columns array contains.", why: "the node sends no DataSet metrics" },
  { id: "payloads-dataset-parameter-type-req", test: "SendComplexDataTest", verdict: 'does not apply', says: "The types array MUST be included in all DataSets.", why: "the node sends no DataSet metrics" },
  { id: "payloads-template-dataset-value", test: "SendComplexDataTest", verdict: 'does not apply', says: "The value supplied MUST be one of the following Google Protobuf types: _uint32_, _uint64_, _float_, _double_, _bool_, or _string_.", why: "the node sends no Template metrics" },
  { id: "payloads-template-is-definition", test: "SendComplexDataTest", verdict: 'does not apply', says: "This MUST be included in every Template Definition and Template Instance.", why: "the node sends no Template metrics" },
  { id: "payloads-template-definition-is-definition", test: "SendComplexDataTest", verdict: 'does not apply', says: "A Template Definition MUST have is_definition set to true.", why: "the node sends no Template metrics" },
  { id: "payloads-template-instance-is-definition", test: "SendComplexDataTest", verdict: 'does not apply', says: "A Template Instance MUST have is_definition set to false.", why: "the node sends no Template metrics" },
  { id: "payloads-template-definition-ref", test: "SendComplexDataTest", verdict: 'does not apply', says: "A Template Definition MUST omit the template_ref field.", why: "the node sends no Template metrics" },
  { id: "payloads-template-instance-ref", test: "SendComplexDataTest", verdict: 'does not apply', says: "A Template Instance MUST have template_ref set to the type of template definition it is.", why: "the node sends no Template metrics" },
  { id: "payloads-template-ref-definition", test: "SendComplexDataTest", verdict: 'does not apply', says: "This MUST be omitted if this is a Template Definition.", why: "the node sends no Template metrics" },
  { id: "payloads-template-is-definition-definition", test: "SendComplexDataTest", verdict: 'does not apply', says: "This MUST be set to true if this is a Template Definition.", why: "the node sends no Template metrics" },
  { id: "payloads-template-is-definition-instance", test: "SendComplexDataTest", verdict: 'does not apply', says: "This MUST be set to false if this is a Template Instance.", why: "the node sends no Template metrics" },
  { id: "payloads-template-version", test: "SendComplexDataTest", verdict: 'does not apply', says: "If included, the version MUST be a UTF-8 string representing the version of the Template.", why: "the node sends no Template metrics" },
  { id: "payloads-template-ref-instance", test: "SendComplexDataTest", verdict: 'does not apply', says: "This MUST be a UTF-8 string representing a reference to a Template Definition name if this is a Template Instance.", why: "the node sends no Template metrics" },
  { id: "payloads-template-parameter-name-required", test: "SendComplexDataTest", verdict: 'does not apply', says: "This MUST be included in every Template Parameter definition.", why: "the node sends no Template metrics" },
  { id: "payloads-template-parameter-name-type", test: "SendComplexDataTest", verdict: 'does not apply', says: "This MUST be a UTF-8 string representing the name of the Template parameter.", why: "the node sends no Template metrics" },
  { id: "payloads-template-parameter-value-type", test: "SendComplexDataTest", verdict: 'does not apply', says: "This MUST be an unsigned 32-bit integer representing the datatype.", why: "the node sends no Template metrics" },
  { id: "payloads-template-parameter-type-value", test: "SendComplexDataTest", verdict: 'does not apply', says: "This value MUST be one of the enumerated values as shown in the valid Sparkplug Data Types." , why: "the node sends no Template metrics" },
  { id: "payloads-template-parameter-type-req", test: "SendComplexDataTest", verdict: 'does not apply', says: "This MUST be included in Template Parameter Definitions in NBIRTH and DBIRTH messages.", why: "the node sends no Template metrics" },
  { id: "payloads-template-parameter-value", test: "SendComplexDataTest", verdict: 'does not apply', says: "The value supplied MUST be one of the following Google Protocol Buffer types: _uint32_, _uint64_, _float_, _double_, _bool_, or _string_.", why: "the node sends no Template metrics" },
  { id: "topics-ndata-mqtt", test: "SendDataTest", verdict: 'passes', says: "NDATA messages MUST be published with MQTT QoS equal to 0 and retain equal to false." },
  { id: "topics-ndata-seq-num", test: "SendDataTest", verdict: 'passes', says: "The NDATA MUST include a sequence number in the payload and it MUST have a value of one greater than the previous MQTT message from the Edge Node contained unless the previous MQTT message contained a value of 255. In this case the sequence number MUST be 0." },
  { id: "topics-ndata-timestamp", test: "SendDataTest", verdict: 'passes', says: "The NDATA MUST include a timestamp denoting the date and time the message was sent from the Edge Node." },
  { id: "topics-ndata-payload", test: "SendDataTest", verdict: 'passes', says: "The NDATA MUST include the Edge Node’s metrics that have changed since the last NBIRTH or NDATA message." },
  { id: "topics-ddata-mqtt", test: "SendDataTest", verdict: 'passes', says: "DDATA messages MUST be published with MQTT QoS equal to 0 and retain equal to false." },
  { id: "topics-ddata-seq-num", test: "SendDataTest", verdict: 'passes', says: "The DDATA MUST include a sequence number in the payload and it MUST have a value of one greater than the previous MQTT message from the Edge Node contained unless the previous MQTT message contained a value of 255. In this case the sequence number MUST be 0." },
  { id: "topics-ddata-timestamp", test: "SendDataTest", verdict: 'passes', says: "The DDATA MUST include a timestamp denoting the date and time the message was sent from the Edge Node." },
  { id: "topics-ddata-payload", test: "SendDataTest", verdict: 'passes', says: "The DDATA MUST include the Device’s metrics that have changed since the last DBIRTH or DDATA message." },
  { id: "payloads-ndata-timestamp", test: "SendDataTest", verdict: 'passes', says: "NDATA messages MUST include a payload timestamp that denotes the time at which the message was published." },
  { id: "payloads-ndata-seq", test: "SendDataTest", verdict: 'passes', says: "Every NDATA message MUST include a sequence number." },
  { id: "payloads-ndata-qos", test: "SendDataTest", verdict: 'passes', says: "NDATA messages MUST be published with the MQTT QoS set to 0." },
  { id: "payloads-ndata-retain", test: "SendDataTest", verdict: 'passes', says: "NDATA messages MUST be published with the MQTT retain flag set to false." },
  { id: "payloads-ddata-timestamp", test: "SendDataTest", verdict: 'passes', says: "DDATA messages MUST include a payload timestamp that denotes the time at which the message was published." },
  { id: "payloads-ddata-seq", test: "SendDataTest", verdict: 'passes', says: "Every DDATA message MUST include a sequence number." },
  { id: "payloads-ddata-qos", test: "SendDataTest", verdict: 'passes', says: "DDATA messages MUST be published with the MQTT QoS set to 0." },
  { id: "payloads-ddata-retain", test: "SendDataTest", verdict: 'passes', says: "DDATA messages MUST be published with the MQTT retain flag set to false." },
  { id: "payloads-template-definition-nbirth-only", test: "SendDataTest", verdict: 'does not apply', says: "Template Definitions MUST only be included in NBIRTH messages.", why: "the node sends no Template metrics" },
  { id: "payloads-template-definition-parameters-default", test: "SendDataTest", verdict: 'does not apply', says: "A Template Definition MAY include values for parameters in the Template Definition parameters.", why: "the node sends no Template metrics" },
  { id: "payloads-template-definition-members", test: "SendDataTest", verdict: 'does not apply', says: "A Template Definition MUST include all member metrics that will ever be included in corresponding template instances.", why: "the node sends no Template metrics" },
  { id: "payloads-template-instance-members-birth", test: "SendDataTest", verdict: 'does not apply', says: "A Template Instance in a NBIRTH or DBIRTH message MUST include all members that were included in the corresponding Template Definition.", why: "the node sends no Template metrics" },
  { id: "payloads-template-instance-members-data", test: "SendDataTest", verdict: 'does not apply', says: "A Template Instance in a NDATA or DDATA message MAY include only a subset of the members that were included in the corresponding template definition.", why: "the node sends no Template metrics" },
  { id: "payloads-template-definition-nbirth", test: "SendDataTest", verdict: 'does not apply', says: "A Template Definition MUST be included in the NBIRTH for all Template Instances that are included in the NBIRTH and DBIRTH messages.", why: "the node sends no Template metrics" },
  { id: "payloads-template-instance-members", test: "SendDataTest", verdict: 'does not apply', says: "A Template Instance MUST include only members that were included in the corresponding template definition.", why: "the node sends no Template metrics" },
  { id: "payloads-template-definition-parameters", test: "SendDataTest", verdict: 'does not apply', says: "A Template Definition MUST include all parameters that will be included in the corresponding Template Instances.", why: "the node sends no Template metrics" },
  { id: "payloads-template-instance-parameters", test: "SendDataTest", verdict: 'does not apply', says: "A Template Instance MAY include parameter values for any parameters that were included in the corresponding Template Definition.", why: "the node sends no Template metrics" },
  { id: "topics-ndata-topic", test: "SendDataTest", verdict: 'passes', says: "The Edge Node data topic for a Sparkplug Edge Node MUST be of the form 'namespace/group_id/NDATA/edge_node_id' where the namespace is replaced with the specific namespace for this version of Sparkplug and the group_id and edge_node_id are replaced with the Group and Edge Node ID for this specific Edge Node." },
  { id: "topics-ddata-topic", test: "SendDataTest", verdict: 'passes', says: "The Device command topic for a Sparkplug Device MUST be of the form 'namespace/group_id/DDATA/edge_node_id/device_id' where the namespace is replaced with the specific namespace for this version of Sparkplug and the group_id, edge_node_id, and device_id are replaced with the Group, Edge Node, and Device ID for this specific Device." },
  { id: "payloads-metric-timestamp-in-utc", test: "SendDataTest", verdict: 'passes', says: "Metric timestamps MUST be in UTC: milliseconds since the epoch (the TCK's id; no statement of the specification carries it)." },
  { id: "principles-birth-certificates-order", test: "SessionEstablishmentTest", verdict: 'passes', says: "Birth Certificates MUST be the first MQTT messages published by any Edge Node or any Host Application." },
  { id: "principles-persistence-clean-session-311", test: "SessionEstablishmentTest", verdict: 'passes', says: "If the MQTT client is using MQTT v3.1.1, the Edge Node's MQTT CONNECT packet MUST set the 'Clean Session' flag to true." },
  { id: "principles-persistence-clean-session-50", test: "SessionEstablishmentTest", verdict: 'passes', says: "If the MQTT client is using MQTT v5.0, the Edge Node's MQTT CONNECT packet MUST set the 'Clean Start' flag to true and the 'Session Expiry Interval' to 0." },
  { id: "payloads-ndeath-will-message-qos", test: "SessionEstablishmentTest", verdict: 'passes', says: "The NDEATH message MUST set the MQTT Will QoS to 1 in the MQTT CONNECT packet." },
  { id: "payloads-ndeath-seq", test: "SessionEstablishmentTest", verdict: 'passes', says: "Every NDEATH message MUST NOT include a sequence number." },
  { id: "topics-ndeath-seq", test: "SessionEstablishmentTest", verdict: 'passes', says: "The NDEATH message MUST NOT include a sequence number." },
  { id: "topics-ndeath-payload", test: "SessionEstablishmentTest", verdict: 'passes', says: "The NDEATH message contains a very simple payload that MUST only include a single metric, the bdSeq number, so that the NDEATH event can be associated with the NBIRTH." },
  { id: "payloads-ndeath-will-message-retain", test: "SessionEstablishmentTest", verdict: 'passes', says: "The NDEATH message MUST set the MQTT Will Retained flag to false in the MQTT CONNECT packet." },
  { id: "payloads-nbirth-qos", test: "SessionEstablishmentTest", verdict: 'passes', says: "NBIRTH messages MUST be published with the MQTT QoS set to 0." },
  { id: "payloads-nbirth-retain", test: "SessionEstablishmentTest", verdict: 'passes', says: "NBIRTH messages MUST be published with the MQTT retain flag set to false." },
  { id: "payloads-nbirth-seq", test: "SessionEstablishmentTest", verdict: 'passes', says: "Every NBIRTH message MUST include a sequence number and it MUST have a value between 0 and 255 (inclusive)." },
  { id: "payloads-sequence-num-req-nbirth", test: "SessionEstablishmentTest", verdict: 'passes', says: "A NBIRTH message from an Edge Node MUST always contain a sequence number between 0 and 255 (inclusive)." },
  { id: "payloads-nbirth-bdseq", test: "SessionEstablishmentTest", verdict: 'passes', says: "Every NBIRTH message MUST include a bdSeq number metric." },
  { id: "payloads-nbirth-timestamp", test: "SessionEstablishmentTest", verdict: 'passes', says: "NBIRTH messages MUST include a payload timestamp that denotes the time at which the message was published." },
  { id: "payloads-nbirth-rebirth-req", test: "SessionEstablishmentTest", verdict: 'passes', says: "Every NBIRTH MUST include a metric with the name 'Node Control/Rebirth' and have a boolean value of false." },
  { id: "payloads-ndeath-bdseq", test: "SessionEstablishmentTest", verdict: 'passes', says: "The NDEATH message MUST include the same bdSeq number value that will be used in the associated NBIRTH message." },
  { id: "message-flow-edge-node-ncmd-subscribe", test: "SessionEstablishmentTest", verdict: 'passes', says: "The MQTT client associated with the Edge Node MUST subscribe to a topic of the form 'spBv1.0/group_id/NCMD/edge_node_id' where group_id is the Sparkplug Group ID and the edge_node_id is the Sparkplug Edge Node ID for this Edge Node. It MUST subscribe on this topic with a QoS of 1." },
  { id: "topics-nbirth-mqtt", test: "SessionEstablishmentTest", verdict: 'passes', says: "NBIRTH messages MUST be published with MQTT QoS equal to 0 and retain equal to false." },
  { id: "topics-nbirth-seq-num", test: "SessionEstablishmentTest", verdict: 'passes', says: "The NBIRTH MUST include a sequence number in the payload and it MUST have a value of 0." },
  { id: "topics-nbirth-timestamp", test: "SessionEstablishmentTest", verdict: 'passes', says: "The NBIRTH MUST include a timestamp denoting the date and time the message was sent from the Edge Node." },
  { id: "topics-nbirth-bdseq-included", test: "SessionEstablishmentTest", verdict: 'passes', says: "A bdSeq number as a metric MUST be included in the payload." },
  { id: "topics-nbirth-bdseq-matching", test: "SessionEstablishmentTest", verdict: 'passes', says: "This MUST match the bdSeq number provided in the MQTT CONNECT packet’s Will Message payload." },
  { id: "topics-nbirth-rebirth-metric", test: "SessionEstablishmentTest", verdict: 'passes', says: "The NBIRTH message MUST include a metric with the name 'Node Control/Rebirth'. It MUST be of datatype boolean and have a value of false." },
  { id: "payloads-dbirth-qos", test: "SessionEstablishmentTest", verdict: 'passes', says: "DBIRTH messages MUST be published with the MQTT QoS set to 0." },
  { id: "payloads-dbirth-retain", test: "SessionEstablishmentTest", verdict: 'passes', says: "DBIRTH messages MUST be published with the MQTT retain flag set to false." },
  { id: "topics-dbirth-mqtt", test: "SessionEstablishmentTest", verdict: 'passes', says: "DBIRTH messages MUST be published with MQTT QoS equal to 0 and retain equal to false." },
  { id: "topics-dbirth-timestamp", test: "SessionEstablishmentTest", verdict: 'passes', says: "The DBIRTH MUST include a timestamp denoting the date and time the message was sent from the Edge Node." },
  { id: "payloads-dbirth-timestamp", test: "SessionEstablishmentTest", verdict: 'passes', says: "DBIRTH messages MUST include a payload timestamp that denotes the time at which the message was published." },
  { id: "payloads-dbirth-seq", test: "SessionEstablishmentTest", verdict: 'passes', says: "Every DBIRTH message MUST include a sequence number." },
  { id: "topics-dbirth-seq", test: "SessionEstablishmentTest", verdict: 'passes', says: "The DBIRTH MUST include a sequence number in the payload and it MUST have a value of one greater than the previous MQTT message from the Edge Node contained unless the previous MQTT message contained a value of 255. In this case the sequence number MUST be 0." },
  { id: "payloads-dbirth-seq-inc", test: "SessionEstablishmentTest", verdict: 'passes', says: "Every DBIRTH message MUST include a sequence number value that is one greater than the previous sequence number sent by the Edge Node. This value MUST never exceed 255. If in the previous sequence number sent by the Edge Node was 255, the next sequence number sent MUST have a value of 0." },
  { id: "payloads-dbirth-order", test: "SessionEstablishmentTest", verdict: 'passes', says: "All DBIRTH messages sent by an Edge Node MUST be sent immediately after the NBIRTH and before any NDATA or DDATA messages are published by the Edge Node." },
  { id: "operational-behavior-data-commands-rebirth-name", test: "SessionEstablishmentTest", verdict: 'passes', says: "An NBIRTH message MUST include a metric with a name of 'Node Control/Rebirth'." },
  { id: "operational-behavior-data-commands-rebirth-datatype", test: "SessionEstablishmentTest", verdict: 'passes', says: "The 'Node Control/Rebirth' metric in the NBIRTH message MUST have a datatype of 'Boolean'." },
  { id: "operational-behavior-data-commands-rebirth-value", test: "SessionEstablishmentTest", verdict: 'passes', says: "The 'Node Control/Rebirth' metric value in the NBIRTH message MUST have a value of false." },
  { id: "operational-behavior-data-publish-nbirth-values", test: "SessionEstablishmentTest", verdict: 'passes', says: "For each metric in the NBIRTH, the value MUST be set to the current value or if the current value is null, the is_null flag MUST be set to true and MUST NOT have a value specified." },
  { id: "operational-behavior-data-publish-dbirth-values", test: "SessionEstablishmentTest", verdict: 'passes', says: "For each metric in the DBIRTH, the value MUST be set to the current value or if the current value is null, the is_null flag MUST be set to true and MUST NOT have a value specified." },
  { id: "operational-behavior-data-commands-rebirth-name-aliases", test: "SessionEstablishmentTest", verdict: 'passes', says: "When aliases are being used by an Edge Node an NBIRTH message MUST NOT include an alias for the 'Node Control/Rebirth' metric." },
  { id: "topics-nbirth-metrics", test: "SessionEstablishmentTest", verdict: 'passes', says: "At a minimum each metric MUST include the metric name, datatype, and current value." },
  { id: "topics-dbirth-metrics", test: "SessionEstablishmentTest", verdict: 'passes', says: "At a minimum each metric MUST include the metric name, metric datatype, and current value." },
  { id: "message-flow-edge-node-birth-publish-nbirth-qos", test: "SessionEstablishmentTest", verdict: 'passes', says: "The Edge Node's NBIRTH MQTT QoS MUST be 0." },
  { id: "message-flow-edge-node-birth-publish-nbirth-retained", test: "SessionEstablishmentTest", verdict: 'passes', says: "The Edge Node's NBIRTH retained flag MUST be set to false." },
  { id: "message-flow-edge-node-birth-publish-nbirth-payload-seq", test: "SessionEstablishmentTest", verdict: 'passes', says: "The Edge Node's NBIRTH payload MUST include a 'seq' number that is between 0 and 255 (inclusive)." },
  { id: "message-flow-edge-node-birth-publish-nbirth-payload", test: "SessionEstablishmentTest", verdict: 'passes', says: "The Edge Node's NBIRTH payload MUST be a Sparkplug Google Protobuf encoded payload." },
  { id: "message-flow-edge-node-birth-publish-will-message-will-retained", test: "SessionEstablishmentTest", verdict: 'passes', says: "The Edge Node's MQTT Will Message's retained flag MUST be set to false." },
  { id: "message-flow-edge-node-birth-publish-will-message-payload", test: "SessionEstablishmentTest", verdict: 'passes', says: "The Edge Node's MQTT Will Message's payload MUST be a Sparkplug Google Protobuf encoded payload." },
  { id: "message-flow-edge-node-birth-publish-will-message", test: "SessionEstablishmentTest", verdict: 'passes', says: "When a Sparkplug Edge Node sends its MQTT CONNECT packet, it MUST include a Will Message." },
  { id: "message-flow-edge-node-birth-publish-will-message-topic", test: "SessionEstablishmentTest", verdict: 'passes', says: "The Edge Node's MQTT Will Message's topic MUST be of the form 'spBv1.0/group_id/NDEATH/edge_node_id' where group_id is the Sparkplug Group ID and the edge_node_id is the Sparkplug Edge Node ID for this Edge Node" },
  { id: "message-flow-edge-node-birth-publish-connect", test: "SessionEstablishmentTest", verdict: 'passes', says: "Any Edge Node in the MQTT infrastructure MUST establish an MQTT Session prior to publishing NBIRTH and DBIRTH messages." },
  { id: "message-flow-device-dcmd-subscribe", test: "SessionEstablishmentTest", verdict: 'passes', says: "If the Device supports writing to outputs, the MQTT client associated with the Device MUST subscribe to a topic of the form 'spBv1.0/group_id/DCMD/edge_node_id/device_id' where group_id is the Sparkplug Group ID the edge_node_id is the Sparkplug Edge Node ID and the device_id is the Sparkplug Device ID for this Device. It MUST subscribe on this topic with a QoS of 1." },
  { id: "message-flow-edge-node-birth-publish-nbirth-topic", test: "SessionEstablishmentTest", verdict: 'passes', says: "The Edge Node's NBIRTH MQTT topic MUST be of the form 'spBv1.0/group_id/NBIRTH/edge_node_id' where group_id is the Sparkplug Group ID and the edge_node_id is the Sparkplug Edge Node ID for this Edge Node" },
  { id: "message-flow-edge-node-birth-publish-will-message-qos", test: "SessionEstablishmentTest", verdict: 'passes', says: "The Edge Node's MQTT Will Message's MQTT QoS MUST be 1." },
  { id: "message-flow-edge-node-birth-publish-nbirth-payload-bdseq", test: "SessionEstablishmentTest", verdict: 'passes', says: "The Edge Node's NBIRTH payload MUST include a bdSeq metric (the TCK's id; no statement of the specification carries it)." },
  { id: "message-flow-device-birth-publish-dbirth-topic", test: "SessionEstablishmentTest", verdict: 'passes', says: "The Device's DBIRTH MQTT topic MUST be of the form 'spBv1.0/group_id/DBIRTH/edge_node_id/device_id' where group_id is the Sparkplug Group ID the edge_node_id is the Sparkplug Edge Node ID and the device_id is the Sparkplug Device ID for this Device." },
  { id: "message-flow-device-birth-publish-dbirth-payload", test: "SessionEstablishmentTest", verdict: 'passes', says: "The Device's DBIRTH payload MUST be a Sparkplug Google Protobuf encoded payload." },
  { id: "message-flow-device-birth-publish-dbirth-qos", test: "SessionEstablishmentTest", verdict: 'passes', says: "The Device's DBIRTH MQTT QoS MUST be 0." },
  { id: "message-flow-device-birth-publish-dbirth-retained", test: "SessionEstablishmentTest", verdict: 'passes', says: "The Device's DBIRTH retained flag MUST be set to false." },
  { id: "message-flow-device-birth-publish-nbirth-wait", test: "SessionEstablishmentTest", verdict: 'passes', says: "The NBIRTH message MUST have been sent within the current MQTT session prior to a DBIRTH being published." },
  { id: "message-flow-device-birth-publish-dbirth-match-edge-node-topic", test: "SessionEstablishmentTest", verdict: 'passes', says: "The Device's DBIRTH MQTT topic group_id and edge_node_id MUST match the group_id and edge_node_id that were sent in the prior NBIRTH message for the Edge Node this Device is associated with." },
  { id: "payloads-nbirth-bdseq-repeat", test: "SessionEstablishmentTest", verdict: 'passes', says: "The bdSeq number value MUST match the bdSeq number value that was sent in the prior MQTT CONNECT packet WILL Message." },
  { id: "payloads-ndata-order", test: "SessionEstablishmentTest", verdict: 'passes', says: "All NDATA messages sent by an Edge Node MUST NOT be sent until all the NBIRTH and all DBIRTH messages have been published by the Edge Node." },
  { id: "payloads-ddata-order", test: "SessionEstablishmentTest", verdict: 'passes', says: "All DDATA messages sent by an Edge Node MUST NOT be sent until all the NBIRTH and all DBIRTH messages have been published by the Edge Node." },
  { id: "payloads-alias-uniqueness", test: "SessionEstablishmentTest", verdict: 'passes', says: "If supplied in an NBIRTH or DBIRTH it MUST be a unique number across this Edge Node's entire set of metrics." },
  { id: "topics-nbirth-topic", test: "SessionEstablishmentTest", verdict: 'passes', says: "The Birth Certificate topic for a Sparkplug Edge Node MUST be of the form 'namespace/group_id/NBIRTH/edge_node_id' where the namespace is replaced with the specific namespace for this version of Sparkplug and the group_id and edge_node_id are replaced with the Group and Edge Node ID for this specific Edge Node." },
  { id: "topics-dbirth-topic", test: "SessionEstablishmentTest", verdict: 'passes', says: "The Device Birth topic for a Sparkplug Device MUST be of the form 'namespace/group_id/DBIRTH/edge_node_id/device_id' where the namespace is replaced with the specific namespace for this version of Sparkplug and the group_id, edge_node_id, and device_id are replaced with the Group, Edge Node, and Device ID for this specific Device." },
  { id: "case-sensitivity-metric-names", test: "SessionEstablishmentTest", verdict: 'not yet done', says: "An Edge Node SHOULD NOT publish metric names that when converted to all lower case match.", why: "(SHOULD NOT) metric names are the item ids as they are, and item ids are case-sensitive (sensor:g1/Temp and sensor:g1/temp are two items): their names are equal in lower case. Renaming one would make a metric's name depend on which item came first" },
  { id: "payloads-alias-birth-requirement", test: "SessionEstablishmentTest", verdict: 'passes', says: "NBIRTH and DBIRTH messages MUST include both a metric name and alias." },
  { id: "payloads-metric-datatype-req", test: "SessionEstablishmentTest", verdict: 'passes', says: "The datatype MUST be included with each metric definition in NBIRTH and DBIRTH messages." },
  { id: "topics-ddeath-mqtt", test: "SessionTerminationTest", verdict: 'passes', says: "DDEATH messages MUST be published with MQTT QoS equal to 0 and retain equal to false." },
  { id: "topics-ddeath-seq-num", test: "SessionTerminationTest", verdict: 'passes', says: "The DDEATH MUST include a sequence number in the payload and it MUST have a value of one greater than the previous MQTT message from the Edge Node contained unless the previous MQTT message contained a value of 255. In this case the sequence number MUST be 0." },
  { id: "payloads-ddeath-timestamp", test: "SessionTerminationTest", verdict: 'passes', says: "DDEATH messages MUST include a payload timestamp that denotes the time at which the message was published." },
  { id: "payloads-ddeath-seq", test: "SessionTerminationTest", verdict: 'passes', says: "Every DDEATH message MUST include a sequence number." },
  { id: "payloads-ddeath-seq-inc", test: "SessionTerminationTest", verdict: 'passes', says: "Every DDEATH message MUST include a sequence number value that is one greater than the previous sequence number sent by the Edge Node. This value MUST never exceed 255. If in the previous sequence number sent by the Edge Node was 255, the next sequence number sent MUST have a value of 0." },
  { id: "payloads-ddeath-seq-number", test: "SessionTerminationTest", verdict: 'passes', says: "A sequence number MUST be included with the DDEATH messages so the Host Application can ensure order of messages and maintain the state of the data." },
  { id: "operational-behavior-edge-node-intentional-disconnect-ndeath", test: "SessionTerminationTest", verdict: 'passes', says: "When an Edge Node disconnects intentionally, it MUST publish an NDEATH before terminating the connection." },
  { id: "operational-behavior-edge-node-intentional-disconnect-packet", test: "SessionTerminationTest", verdict: 'passes', says: "Immediately following the NDEATH publish, a DISCONNECT packet MAY be sent to the MQTT Server." },
  { id: "operational-behavior-device-ddeath", test: "SessionTerminationTest", verdict: 'passes', says: "If a Sparkplug Edge Node loses connection with an attached Sparkplug Device, it MUST publish a DDEATH message on behalf of the device." },
  { id: "payloads-ndeath-will-message-publisher", test: "SessionTerminationTest", verdict: 'passes', says: "An NDEATH message SHOULD be published by the Edge Node before it intentionally disconnects from the MQTT Server." },
  { id: "payloads-ndeath-will-message-publisher-disconnect-mqtt311", test: "SessionTerminationTest", verdict: 'passes', says: "If the Edge Node is using MQTT 3.1.1 and it sends an MQTT DISCONNECT packet, the Edge Node MUST publish an NDEATH message to the MQTT Server before it sends the MQTT DISCONNECT packet." },
  { id: "payloads-ndeath-will-message-publisher-disconnect-mqtt50", test: "SessionTerminationTest", verdict: 'passes', says: "If the Edge Node is using MQTT 5.0 and it sends an MQTT DISCONNECT packet, the MQTT v5.0 'Disconnect with Will Message' reason code MUST be set in the DISCONNECT packet." },
  { id: "topics-ndeath-topic", test: "SessionTerminationTest", verdict: 'passes', says: "The Edge Node Death Certificate topic for a Sparkplug Edge Node MUST be of the form 'namespace/group_id/NDEATH/edge_node_id' where the namespace is replaced with the specific namespace for this version of Sparkplug and the group_id and edge_node_id are replaced with the Group and Edge Node ID for this specific Edge Node." },
  { id: "topics-ddeath-topic", test: "SessionTerminationTest", verdict: 'passes', says: "The Device Death Certificate topic for a Sparkplug Device MUST be of the form 'namespace/group_id/DDEATH/edge_node_id/device_id' where the namespace is replaced with the specific namespace for this version of Sparkplug and the group_id, edge_node_id, and device_id are replaced with the Group, Edge Node, and Device ID for this specific Device." },
];

export const TCK_MARK = '<!-- the table below is written by node dist/test/conformance/sparkplug-tck.js --write -->';
export const TCK_FILE = path.resolve(__dirname, '..', '..', '..', 'test', 'conformance', 'SPARKPLUG-TCK.md');

export function tckTable(): string {
  const count = (v: TckVerdict) => EDGE_PROFILE.filter((r) => r.verdict === v).length;
  const rows = EDGE_PROFILE.map((r) => `| \`${r.id}\` | ${r.test.replace(/Test$/, '')} | ${r.verdict}${r.why ? `: ${cell(r.why)}` : ''} | ${cell(r.says)} |`);
  return [
    `${EDGE_PROFILE.length} ids: ${count('passes')} pass, ${count('does not apply')} do not apply, ${count('not yet done')} not yet done.`,
    '',
    '| tck-id | TCK test | here | the specification says |',
    '|---|---|---|---|',
    ...rows,
  ].join('\n') + '\n';
}

/** SPARKPLUG-TCK.md as it should be: its text up to TCK_MARK, then the table. */
export function tckFileWithTable(text: string): string {
  const at = text.indexOf(TCK_MARK);
  if (at < 0) throw new Error(`${TCK_FILE} has no line ${TCK_MARK}`);
  return `${text.slice(0, at + TCK_MARK.length)}\n\n${tckTable()}`;
}

if (require.main === module) {
  if (process.argv.includes('--write')) {
    fs.writeFileSync(TCK_FILE, tckFileWithTable(fs.readFileSync(TCK_FILE, 'utf8')));
    console.log(`${TCK_FILE} written`);
  } else {
    process.stdout.write(tckTable());
  }
}
