/** The service's error table: code → message and HTTP status. */
export declare const ERRORS: Record<number, {
    message: string;
    status: number;
}>;
